#pragma once
// What a folder offered as one side of a pair is, read from its manifest before anything is
// loaded: the Open dialog checks both folders with it, so a wrong folder is named at once
// instead of after a load that fails.
#include <QString>

namespace ttrace::ui {

struct BundleFolderCheck {
    bool readable = false; // a trace bundle whose manifest parses
    QString role;          // "reference" or "candidate" when readable
    QString summary;       // one line: role, ranks, precision, model
    QString problem;       // why not readable, naming the file
};

[[nodiscard]] BundleFolderCheck checkBundleFolder(const QString& dir);

// What is wrong with the pair as given (the same folder twice, roles swapped, two bundles of
// one role), or empty. `reference` and `candidate` must both be readable.
[[nodiscard]] QString pairProblem(const QString& referenceDir, const BundleFolderCheck& reference,
                                  const QString& candidateDir, const BundleFolderCheck& candidate);

} // namespace ttrace::ui
