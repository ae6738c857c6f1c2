// The explorer's job runner on real threads: a superseded job's results are never delivered
// (nor does queued work that was superseded before its turn run), a cancel reaches the work
// through the token the core's progress callback polls, results arrive on the GUI thread in
// the order posted, work on a thread of its own (the agent client's) posts the same way, and
// destroying the owner mid-job neither crashes nor hangs.
#include "ttrace/ui/models/job_runner.h"

#include <QElapsedTimer>
#include <QtTest>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

using namespace ttrace;
using namespace ttrace::ui;

namespace {

// Blocks a job's work until the test lets it go (or a generous timeout passes, so a broken
// runner fails the test instead of hanging it).
class Gate {
public:
    void open() { open_.store(true); }
    void waitOpen() const {
        QElapsedTimer timer;
        timer.start();
        while (!open_.load() && timer.elapsed() < 10'000) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }

private:
    std::atomic<bool> open_{false};
};

// A long job: polls its token through a core progress callback until cancelled.
int spinUntilCancelled(const JobContext& job, std::atomic<bool>& spinning) {
    const ProgressFn progress = job.token().progress({});
    int polls = 0;
    spinning.store(true);
    QElapsedTimer timer;
    timer.start();
    while (progress(0.5, "spinning") && timer.elapsed() < 10'000) {
        ++polls;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return polls;
}

bool onGuiThread() {
    return QThread::currentThread() == QCoreApplication::instance()->thread();
}

} // namespace

class TestJobRunner : public QObject {
    Q_OBJECT
private slots:
    void supersededJobIsNeverDelivered() {
        JobRunner runner(QStringLiteral("test-runner"));
        std::vector<QString> delivered;
        Gate gate;
        std::atomic<bool> laterRan{false};
        std::atomic<bool> firstRunning{false};
        const JobContext first = runner.start([&](const JobContext& job) {
            firstRunning.store(true);
            gate.waitOpen();
            job.post([&] { delivered.push_back(QStringLiteral("first")); });
        });
        QTRY_VERIFY(firstRunning.load()); // superseded while it runs, not before its turn
        // Queued behind the first, superseded before its turn: never runs.
        runner.start([&](const JobContext&) { laterRan.store(true); });
        const JobContext last = runner.start([&](const JobContext& job) {
            job.post([&] {
                delivered.push_back(QStringLiteral("last"));
                runner.end();
            });
        });
        QVERIFY(first.cancelled()); // a superseded job's token is cancelled
        QVERIFY(!last.cancelled());
        QCOMPARE(runner.currentJob(), last.id());
        gate.open();
        QTRY_VERIFY(!runner.isRunning());
        QTest::qWait(50); // anything still queued would arrive now
        QCOMPARE(delivered, std::vector<QString>{QStringLiteral("last")});
        QVERIFY(!laterRan.load());
    }

    void endedJobDeliversNothingMore() {
        JobRunner runner(QStringLiteral("test-runner"));
        int delivered = 0;
        runner.start([&](const JobContext& job) {
            job.post([&] {
                ++delivered;
                runner.end(); // the job's last word
            });
            job.post([&] { ++delivered; });
        });
        QTRY_VERIFY(!runner.isRunning());
        QTest::qWait(50);
        QCOMPARE(delivered, 1);
    }

    void cancelReachesTheWork() {
        JobRunner runner(QStringLiteral("test-runner"));
        std::atomic<bool> spinning{false};
        int polls = -1;
        bool sawCancel = false;
        runner.start([&](const JobContext& job) {
            const int n = spinUntilCancelled(job, spinning);
            const bool cancelled = job.cancelled() && job.token().replayToken().cancelled();
            job.post([&, n, cancelled] {
                polls = n;
                sawCancel = cancelled;
                runner.end();
            });
        });
        QTRY_VERIFY(spinning.load());
        QVERIFY(runner.isRunning());
        runner.cancel(); // a cancelled job still delivers its own end
        QTRY_VERIFY(!runner.isRunning());
        QVERIFY(polls >= 0);
        QVERIFY(sawCancel);
    }

    void resultsArriveOnTheGuiThreadInOrder() {
        JobRunner runner(QStringLiteral("test-runner"));
        constexpr int kCount = 2000;
        std::vector<int> order;
        bool allOnGui = true;
        const QThread* workThread = nullptr;
        runner.start([&](const JobContext& job) {
            const QThread* self = QThread::currentThread();
            for (int i = 0; i < kCount; ++i) {
                job.post([&, i, self] {
                    allOnGui = allOnGui && onGuiThread();
                    workThread = self;
                    order.push_back(i);
                });
            }
            job.post([&] { runner.end(); });
        });
        QTRY_VERIFY(!runner.isRunning());
        QVERIFY(allOnGui);
        QVERIFY(workThread && workThread != QCoreApplication::instance()->thread());
        QCOMPARE(static_cast<int>(order.size()), kCount);
        for (int i = 0; i < kCount; ++i) {
            QCOMPARE(order[static_cast<std::size_t>(i)], i);
        }
    }

    void workOnItsOwnThreadPostsTheSameWay() {
        // As the agent client's owner thread does: the runner's thread is never used.
        JobRunner runner(QStringLiteral("test-runner"));
        std::vector<int> delivered;
        const JobContext stale = runner.begin();
        const JobContext job = runner.begin();
        std::thread client([stale, job, &delivered] {
            stale.post([&delivered] { delivered.push_back(-1); });
            for (int i = 0; i < 100; ++i) {
                job.post([&delivered, i] { delivered.push_back(i); });
            }
        });
        client.join();
        QTRY_COMPARE(static_cast<int>(delivered.size()), 100);
        QCOMPARE(delivered.front(), 0);
        QCOMPARE(delivered.back(), 99);
        runner.end();
        job.post([&delivered] { delivered.push_back(1000); });
        QTest::qWait(50);
        QCOMPARE(static_cast<int>(delivered.size()), 100);
    }

    void destroyingTheOwnerMidJobNeitherCrashesNorHangs() {
        auto owner = std::make_unique<QObject>();
        auto* runner = new JobRunner(QStringLiteral("test-runner"), owner.get());
        std::atomic<bool> spinning{false};
        int delivered = 0;
        // A job on a thread of its own that outlives the runner and keeps posting; superseded
        // by the next job, so its posts are dropped while the runner lives, and go nowhere after.
        const JobContext outside = runner->begin();
        // Work that floods the GUI thread with posts until cancelled.
        runner->start([&](const JobContext& job) {
            spinning.store(true);
            while (!job.cancelled()) {
                job.post([&delivered] { ++delivered; });
                std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
        });
        std::atomic<bool> stop{false};
        std::thread client([outside, &stop, &delivered] {
            while (!stop.load()) {
                outside.post([&delivered] { ++delivered; });
                std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
        });
        QTRY_VERIFY(spinning.load());
        QTest::qWait(20); // posts are queued, some delivered
        QElapsedTimer timer;
        timer.start();
        owner.reset(); // deletes the runner while its work runs and posts
        QVERIFY2(timer.elapsed() < 5'000, "destroying the runner waited for the work too long");
        const int atDestruction = delivered;
        QTest::qWait(50); // posts queued before and after the destruction: none runs
        stop.store(true);
        client.join();
        QCoreApplication::processEvents();
        QVERIFY(delivered > 0); // the job was delivering when its owner went
        QCOMPARE(delivered, atDestruction);
    }
};

QTEST_GUILESS_MAIN(TestJobRunner)
#include "test_job_runner.moc"
