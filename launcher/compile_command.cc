#include "launcher/compile_command.h"

#include <map>

#include "engine/compiler/compile.h"
#include "engine/core/text_format.h"
#include "engine/ops/builtin_ops.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_io.h"
#include "launcher/model_args.h"

namespace twinflow::launcher {

int RunCompileCommand(const std::vector<std::string>& args, std::ostream& out) {
  ArgParser parser("twinflow compile", "Compile a model to an actor Plan and write it.");
  AddModelFlags(parser);
  parser.Required("output", "FILE", "where to write the Plan (protobuf)")
      .Epilog(
          "example:\n  twinflow compile --model mlp --devices 4 --strategy dp=2,tp=2 "
          "--output plan.pb\n");
  const ParsedArgs parsed = parser.Parse(args);
  if (parsed.help()) {
    out << parser.Usage();
    return 0;
  }
  const graph::OpRegistry registry = ops::BuiltinOps();
  const models::BuiltModel model = BuildModelFromArgs(parsed, registry);
  const compiler::Compiled compiled = CompileFromArgs(model, parsed, registry);
  plan::SavePlan(compiled.plan, parsed.Get("output"));

  std::map<plan::TaskKind, int> kinds;
  for (const plan::Task& task : compiled.plan.tasks()) ++kinds[task.kind()];
  out << "wrote " << parsed.Get("output") << ": " << compiled.plan.tasks_size() << " tasks, "
      << compiled.plan.regsts_size() << " registers, " << compiled.plan.groups_size()
      << " comm groups on " << compiled.plan.devices_size() << " devices; strategy "
      << model.strategy.ToString() << ", optimizer " << models::OptimizerLabel(model) << "\n";
  out << "tasks by kind:";
  for (const auto& [kind, count] : kinds) out << " " << plan::TaskKind_Name(kind) << "=" << count;
  out << "\nmemory per device:\n";
  TextTable table({"device", "arena", "peak"});
  for (const plan::MemoryPlan& m : compiled.plan.memory()) {
    const plan::Device& d = compiled.plan.devices(m.device());
    table.Add({plan::EnumName(d.type()) + ":" + std::to_string(d.index()),
               FormatBytes(m.arena_bytes()), FormatBytes(m.peak_bytes())});
  }
  table.Print(out);
  out << "content hash " << compiled.plan.content_hash() << "\n";  // stamped by Compile
  return 0;
}

}  // namespace twinflow::launcher
