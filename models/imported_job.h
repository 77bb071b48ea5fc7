#pragma once
// ImportedJob: what another framework's job description (a Megatron-LM command line, a
// torchtitan TOML) says in twinflow's own terms, so a user can time the run they already have.
// Only the standard library: the readers fill it, the CLI turns it into flags.
#include <string>
#include <utility>
#include <vector>

namespace twinflow::models {

struct ImportedJob {
  std::string source;  // "--megatron-args" or "--torchtitan FILE": where the values came from
  std::string model;   // "gpt" or "llama"
  // twinflow model flags without dashes, in a fixed order: preset (torchtitan flavors only),
  // layers, hidden, heads, kv-heads, ffn, sequence, vocab, batch, micro-batch-size, attention,
  // optimizer (when not the default). A flag the source leaves to the default is absent.
  std::vector<std::pair<std::string, std::string>> flags;
  // Strategy fields in the order dp (only where the source gives it), tp, pp, vp, schedule, sp,
  // zero, precision, grad_reduce, recompute, overlap; a field at twinflow's default is
  // absent, except tp, pp, precision and overlap, which are always written.
  std::vector<std::pair<std::string, std::string>> strategy;
  // One entry per source flag or key that changes nothing twinflow times, with the reason:
  // "--lr (optimizer hyper-parameters change no step time)".
  std::vector<std::string> ignored;

  // The strategy as twinflow's strategy string: "tp=2,pp=4,sp=true,precision=bf16".
  std::string StrategyText() const;
};

}  // namespace twinflow::models
