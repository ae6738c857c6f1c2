#pragma once
// The comparison results the explorer shows: tensor results as they stream in from the engine,
// then the engine's final, immutable DiffResult. Indexed by (module, kind) so the tree model can
// find a cell's tensors quickly. Qt-free apart from nothing: plain C++ over core types.
#include "ttrace/compare/diff_result.h"
#include "ttrace/ui/models/step_filter.h"

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ttrace::ui {

class ResultSet {
public:
    void clear();
    // Appends a streamed result; returns its index. Ignored (returns npos) once final.
    std::size_t add(TensorResult result);
    // Replaces the streamed results with the engine's final ones (indices change).
    void setFinal(std::shared_ptr<const DiffResult> result);

    [[nodiscard]] bool isFinal() const { return final_ != nullptr; }
    [[nodiscard]] const DiffResult* final() const { return final_.get(); }
    // The same, shared: for work that outlives this set (an export rendering it elsewhere).
    [[nodiscard]] std::shared_ptr<const DiffResult> finalShared() const { return final_; }
    [[nodiscard]] const std::vector<TensorResult>& tensors() const;
    [[nodiscard]] const TensorResult& tensor(std::size_t index) const { return tensors()[index]; }
    [[nodiscard]] std::size_t size() const { return tensors().size(); }
    // The engine's per-module verdict (final results only).
    [[nodiscard]] const ModuleResult* module(const std::string& name) const;

    // Every tensor of one module and kind (all indices and steps).
    [[nodiscard]] const std::vector<std::size_t>& cell(const std::string& module,
                                                       TensorKind kind) const;
    // The worst tensor of a cell among those the filter shows.
    [[nodiscard]] std::optional<std::size_t> worst(const std::string& module, TensorKind kind,
                                                   const StepFilter& filter) const;
    // The same tensor (module, kind, index, micro-batch) at every iteration, in order; with
    // `allMicroBatches` every micro-batch too, ordered by (iteration, micro-batch).
    [[nodiscard]] std::vector<std::size_t> history(const TensorId& id,
                                                   bool allMicroBatches = false) const;

    [[nodiscard]] std::vector<std::int64_t> iterations() const;
    [[nodiscard]] std::vector<std::int64_t> microBatches() const; // without -1 ("all")

    // Ordering of badness: invalid > divergent > missing > clean, then by ratio (NaN worst).
    static bool worse(const TensorResult& a, const TensorResult& b);
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);

private:
    void index(std::size_t i);

    std::vector<TensorResult> streamed_;
    std::shared_ptr<const DiffResult> final_;
    std::map<std::pair<std::string, TensorKind>, std::vector<std::size_t>> cells_;
    std::map<std::string, std::size_t> modules_; // into final_->modules
};

} // namespace ttrace::ui
