#pragma once
// Reading a torchtitan training config (the TOML given to torchtitan's train.py with
// --job.config_file) into twinflow's flags and strategy, so a user can time the run they
// already have. Parsed with toml++.
#include <string>

#include "models/imported_job.h"

namespace twinflow::models {

// The twinflow flags and strategy of the torchtitan config at `path`, read with torchtitan's
// defaults for absent keys. [model] name llama3 (flavors debugmodel, 8B, 70B, 405B) or llama2
// (7B, 13B, 70B): a flavor twinflow has a preset for becomes {"preset", ...}, debugmodel its
// sizes. [training] local_batch_size (or the older batch_size), global_batch_size, seq_len and
// mixed_precision_param; [parallelism] data_parallel_replicate_degree (dp),
// tensor_parallel_degree (tp, with sequence parallelism as torchtitan's plan shards the norms),
// pipeline_parallel_degree, pipeline_parallel_schedule (1F1B, GPipe, Interleaved1F1B as vp),
// pipeline_parallel_microbatch_size; [activation_checkpoint] mode and selective_ac_option.
// Every other key is listed in `ignored` with the reason.
//
// InvalidArgumentError naming the file and the key: an unreadable file or bad TOML (with
// toml++'s line and column), a key of the wrong type, an unknown model or flavor, and what
// twinflow cannot run yet: FSDP (data_parallel_shard_degree > 1 or -1, torchtitan's default),
// context_parallel_degree or expert parallelism > 1, float8/mx converters, a pipeline schedule
// other than those three.
ImportedJob ReadTorchtitanConfig(const std::string& path);

}  // namespace twinflow::models
