// Opening a diff report without its bundles (core/include/ttrace/report/report_open.h): the report
// of a real diff of the demo pair reads back to the same result, as a report or as a summary cache
// entry; broken, truncated, foreign and mutated files give a typed error naming the file and
// never a crash.
#include "ttrace/compare/diff_engine.h"
#include "ttrace/compare/report_json.h"
#include "ttrace/report/report_open.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

using namespace ttrace;
namespace fs = std::filesystem;

namespace {

fs::path demoDir() {
    return qEnvironmentVariable("TTRACE_DEMO_DIR").toStdString();
}

DiffResult diffOf(const char* pair) {
    DiffOptions o;
    o.useCache = false;
    return diffBundleDirs(demoDir() / pair / "reference", demoDir() / pair / "candidate", o);
}

std::optional<DiffResult> nullableResult(const std::string& text) {
    std::string error;
    return diffResultFromJson(text, error);
}

void write(const fs::path& file, const std::string& text) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
}

} // namespace

class TestReportOpen : public QObject {
    Q_OBJECT
private:
    QTemporaryDir tmp_;
    std::string report_; // the bug pair's report as `ttrace diff --json` writes it
    std::string clean_;  // the clean pair's

    fs::path file(const char* name) const { return fs::path(tmp_.path().toStdString()) / name; }

    // Writes `text` and opens it: the open must fail with `code` and name the file.
    void expectFailure(const std::string& text, ReportOpenError code, const char* name = "bad") {
        write(file(name), text);
        const auto out = openDiffReport(file(name));
        QVERIFY2(!out.opened && out.failure, name);
        QCOMPARE(kReportOpenErrorNames.name(out.failure->code), kReportOpenErrorNames.name(code));
        QVERIFY2(out.failure->message().find(file(name).string()) != std::string::npos,
                 out.failure->message().c_str());
    }

private slots:
    void initTestCase() {
        QVERIFY2(fs::exists(demoDir() / "bug" / "candidate" / "manifest.json"),
                 "demo bundles missing");
        report_ = diffResultToJson(diffOf("bug"));
        clean_ = diffResultToJson(diffOf("clean"));
        QVERIFY(report_ != clean_);
    }

    void reportReadsBackToTheSameResult() {
        write(file("diff.json"), report_);
        const auto out = openDiffReport(file("diff.json"));
        QVERIFY2(out.opened, out.failure ? out.failure->message().c_str() : "");
        QCOMPARE(diffResultToJson(out.opened->result), report_);
        QVERIFY(out.opened->cacheKey.empty());
        QVERIFY(out.opened->result.firstDivergence.has_value());
        QVERIFY(out.opened->result.summary.divergent > 0);
    }

    void cacheEntryOpensAloneAndBesideItsReport() {
        const std::string key = "ttrace-diff-cache 7 json 1\nreference dir /x\n";
        write(file("r.json"), report_);
        // The entry's document is written compact (diff_cache.cpp), the report pretty.
        const auto body = diffResultToJson(*nullableResult(report_), false);
        write(file("diff-entry.json"), nlohmann::json(key).dump() + "\n" + body);
        const auto alone = openDiffReport(file("diff-entry.json"));
        QVERIFY2(alone.opened, alone.failure ? alone.failure->message().c_str() : "");
        QCOMPARE(alone.opened->cacheKey, key);
        QCOMPARE(diffResultToJson(alone.opened->result), report_);

        const auto both = openDiffReport(file("r.json"), file("diff-entry.json"));
        QVERIFY2(both.opened, both.failure ? both.failure->message().c_str() : "");
        QCOMPARE(both.opened->cacheKey, key);
        QCOMPARE(both.opened->cache, file("diff-entry.json"));
    }

    void cacheMissingOrMismatchedIsNamed() {
        write(file("r.json"), report_);
        auto out = openDiffReport(file("r.json"), file("no-such-entry.json"));
        QVERIFY(out.failure);
        QVERIFY(out.failure->code == ReportOpenError::CacheCannotRead);
        QVERIFY(out.failure->message().find("no-such-entry.json") != std::string::npos);

        write(file("other-entry.json"), nlohmann::json("k").dump() + "\n" + clean_);
        out = openDiffReport(file("r.json"), file("other-entry.json"));
        QVERIFY(out.failure);
        QVERIFY(out.failure->code == ReportOpenError::CacheMismatch);
        QVERIFY(out.failure->message().find("other-entry.json") != std::string::npos);

        // A report given as the cache entry: no key line, so it is not an entry.
        out = openDiffReport(file("r.json"), file("r.json"));
        QVERIFY(out.failure);
        QVERIFY(out.failure->code == ReportOpenError::CacheMalformed);
    }

    void unreadableFiles() {
        auto out = openDiffReport(file("missing.json"));
        QVERIFY(out.failure && out.failure->code == ReportOpenError::CannotRead);
        QVERIFY(out.failure->message().find("missing.json") != std::string::npos);
        out = openDiffReport(fs::path(tmp_.path().toStdString()));
        QVERIFY(out.failure && out.failure->code == ReportOpenError::CannotRead);
        expectFailure("", ReportOpenError::Empty);
    }

    void foreignDocuments() {
        expectFailure("not json at all", ReportOpenError::NotJson);
        expectFailure("[1, 2, 3]", ReportOpenError::WrongSchema);
        expectFailure(R"({"schema": "ttrace-localize", "schema_version": 1})",
                      ReportOpenError::WrongSchema);
        auto doc = nlohmann::json::parse(report_);
        doc["schema_version"] = kDiffJsonVersion + 1;
        expectFailure(doc.dump(), ReportOpenError::WrongSchema, "newer");
        expectFailure(std::string(200000, '[') + std::string(200000, ']'),
                      ReportOpenError::WrongSchema, "deep");
        // A cache entry's key line, then something else than the document.
        expectFailure("\"a key\"\n{\"schema\": 1}", ReportOpenError::WrongSchema,
                      "key-then-foreign");
        expectFailure("\"a key\n" + report_, ReportOpenError::Malformed, "broken-key");
    }

    void fieldsOutOfRangeOrOfTheWrongType() {
        const auto base = nlohmann::json::parse(report_);
        auto doc = base;
        doc["modules"][0]["tensors"].push_back(doc["tensors"].size() + 7);
        expectFailure(doc.dump(), ReportOpenError::Malformed, "index");
        doc = base;
        doc["modules"][0]["tensors"].push_back(-1);
        expectFailure(doc.dump(), ReportOpenError::Malformed, "negative");
        doc = base;
        doc["tensors"][0]["shape"] = nlohmann::json::array({4, -2});
        expectFailure(doc.dump(), ReportOpenError::Malformed, "shape");
        doc = base;
        doc["tensors"][0]["status"] = "sideways";
        expectFailure(doc.dump(), ReportOpenError::Malformed, "status");
        doc = base;
        doc["summary"]["compared"] = "many";
        expectFailure(doc.dump(), ReportOpenError::Malformed, "type");
        doc = base;
        doc.erase("tensors");
        expectFailure(doc.dump(), ReportOpenError::Malformed, "no-tensors");
        doc = base;
        doc["tensors"][0]["histogram"]["counts"] = std::vector<int>(40, 1);
        expectFailure(doc.dump(), ReportOpenError::Malformed, "histogram");
    }

    void truncatedAnywhere() {
        // Every prefix length a full disk or an interrupted copy could leave, coarse steps
        // through the file plus its first and last bytes.
        std::vector<std::size_t> cuts;
        for (std::size_t n = 1; n < 64; ++n) {
            cuts.push_back(n);
            cuts.push_back(report_.size() - n);
        }
        for (std::size_t n = 64; n < report_.size(); n += report_.size() / 97) {
            cuts.push_back(n);
        }
        for (const auto n : cuts) {
            write(file("cut"), report_.substr(0, n));
            const auto out = openDiffReport(file("cut"));
            // A cut inside the trailing newline still holds the whole document.
            if (out.opened) {
                QVERIFY2(report_.find_first_not_of(" \n", n) == std::string::npos,
                         std::to_string(n).c_str());
                continue;
            }
            QVERIFY(out.failure->code == ReportOpenError::NotJson);
            QVERIFY(out.failure->message().find("cut") != std::string::npos);
        }
    }

    void mutatedBytesNeverCrash() {
        // Random single-byte and range damage: each opens (a digit changed is still a report)
        // or fails with a typed error naming the file.
        std::mt19937 rng(31);
        int failed = 0;
        for (int i = 0; i < 400; ++i) {
            std::string text = report_;
            const auto at = std::uniform_int_distribution<std::size_t>(0, text.size() - 1)(rng);
            const auto len = std::uniform_int_distribution<std::size_t>(1, 8)(rng);
            for (std::size_t k = at; k < std::min(text.size(), at + len); ++k) {
                text[k] = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
            }
            write(file("mutated"), text);
            const auto out = openDiffReport(file("mutated"));
            QVERIFY(out.opened.has_value() != out.failure.has_value());
            if (out.failure) {
                ++failed;
                QVERIFY(out.failure->message().find("mutated") != std::string::npos);
            }
        }
        QVERIFY(failed > 0); // most damage breaks the document
    }
};

QTEST_GUILESS_MAIN(TestReportOpen)
#include "test_report_open.moc"
