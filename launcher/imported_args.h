#pragma once
// --megatron-args "..." and --torchtitan FILE on any command that takes model flags: the job
// another framework describes (models/megatron_args.h, models/torchtitan_config.h), turned
// into twinflow's own flags before the command parses them, so that every command reads it
// alike. A flag given both on the command line and by the job is an error naming both.
#include <ostream>
#include <string>
#include <vector>

namespace twinflow::launcher {

// Whether the command is `tune`: the job's degrees, micro-batches and schedule are what tune
// varies (left out, said so), and its other strategy fields become --with.
enum class ImportUse { kOneStrategy, kTune };

// `args` with --megatron-args TEXT / --torchtitan FILE (either form, --flag value or
// --flag=value) replaced by the flags the job says; unchanged without them. The job's model
// and strategy lines, and what it ignored, go to `note`.
std::vector<std::string> ExpandImportedJob(const std::vector<std::string>& args, ImportUse use,
                                           std::ostream& note);

}  // namespace twinflow::launcher
