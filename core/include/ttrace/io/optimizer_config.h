#pragma once
// The optimizer a bundle's training ran, as the capture recorded it in manifest.json (field
// "optimizer", docs/bundle-format.md): what the optimizer-step tolerances need to re-evaluate
// one update (docs/tolerance.md, "Optimizer-step conditioning"). Only optimizers whose update
// ttrace can re-evaluate are recorded; for any other the section is absent.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ttrace {

enum class OptimizerType {
    Adam,  // L2 weight decay added to the gradient (torch.optim.Adam)
    AdamW, // decoupled weight decay (torch.optim.AdamW)
};
std::string_view optimizerTypeName(OptimizerType type);
std::optional<OptimizerType> parseOptimizerType(std::string_view name);

// One optimizer step of a parameter group: the learning rate it used (schedulers change it)
// and the step count after it (Adam's bias correction uses it).
struct OptimizerStepInfo {
    std::int64_t iteration = 0;
    double lr = 0.0;
    std::int64_t step = 0;
};

struct OptimizerGroup {
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weightDecay = 0.0;
    bool amsgrad = false;
    bool maximize = false;
    std::vector<std::string> params; // "module/param" names; empty: every parameter
    std::vector<OptimizerStepInfo> steps;

    [[nodiscard]] const OptimizerStepInfo* stepAt(std::int64_t iteration) const;
};

// Whether the optimizer's state is sharded over data parallelism, as the job declares it (the
// manifest's optional "optimizer_sharding"): a distributed optimizer's range map, ZeRO, a model
// sharded by FSDP; or torch's and Megatron-core's unsharded optimizers.
struct OptimizerSharding {
    bool sharded = false;
    std::string source; // what declares it, e.g. "torch.optim.adam.Adam"
};

struct OptimizerConfig {
    OptimizerType type = OptimizerType::AdamW;
    std::vector<OptimizerGroup> groups;

    // The group that updates `module`'s parameter `param`; nullptr when none does.
    [[nodiscard]] const OptimizerGroup* groupFor(std::string_view module,
                                                 std::string_view param) const;
};

} // namespace ttrace
