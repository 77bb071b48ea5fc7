#pragma once
// The pipeline schedule: a closed set shared by the strategy (which names it), the lowering
// (which orders each stage's passes by it, compiler/pipeline_schedule.h) and the memory floor
// (which counts the micro-batches it keeps in flight). It lives below all three so that each
// reads the one enum, never a pair of booleans standing for it.
namespace twinflow::parallel {

enum class Schedule {
  kGPipe,         // every forward pass before any backward pass
  kOneFOneB,      // 1F1B: a stage starts a backward as soon as it can (Narayanan et al. 2021)
  kZeroBubbleH1,  // ZB-H1 (Qi et al. 2024): 1F1B with weight gradients deferred into the drain
};
const char* ScheduleName(Schedule schedule);  // "gpipe", "1f1b", "zb-h1"
// Whether a stage runs a backward pass before all forward passes are done (1F1B and ZB-H1).
inline bool InterleavesPasses(Schedule schedule) { return schedule != Schedule::kGPipe; }

}  // namespace twinflow::parallel
