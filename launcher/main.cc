// The `twinflow` command line: dispatches to one command and maps errors to exit codes.
//   0  success (and --help)
//   2  bad input: usage mistakes and InvalidArgument, Shape, Sbp and Plan errors
//   1  a runtime failure: any other error
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "launcher/boxing_command.h"
#include "launcher/calibrate_command.h"
#include "launcher/cli_args.h"
#include "launcher/compile_command.h"
#include "launcher/demo_command.h"
#include "launcher/explain_command.h"
#include "launcher/imported_args.h"
#include "launcher/memory_command.h"
#include "launcher/run_command.h"
#include "launcher/sim_command.h"
#include "launcher/tune_command.h"

namespace twinflow::launcher {
namespace {

using CommandFn = int (*)(const std::vector<std::string>& args, std::ostream& out);

struct Command {
  const char* name;
  const char* summary;
  CommandFn run;
};

constexpr Command kCommands[] = {
    {"demo", "walk through instructive boxing plans on a 2x4 mesh", RunDemoCommand},
    {"boxing", "plan the boxing between two layouts of a tensor and print its steps",
     RunBoxingCommand},
    {"explain", "search a model's layouts; list signatures, boxings and memory", RunExplainCommand},
    {"compile", "compile a model to an actor Plan file", RunCompileCommand},
    {"run", "train a model on CPU devices, in-process or under mpirun", RunRunCommand},
    {"sim", "simulate a model's Plan on a modelled cluster (step time, MFU, memory)",
     RunSimCommand},
    {"memory", "a model's Plan memory per device and stage: weights, gradients, optimizer, ...",
     RunMemoryCommand},
    {"calibrate", "time this host's kernels for a model; write the cpu-local cluster spec",
     RunCalibrateCommand},
    {"tune", "rank the strategies of a model on a cluster by simulated step time", RunTuneCommand},
};

void PrintUsage(std::ostream& out) {
  out << "usage: twinflow <command> [options]\n\n"
         "twinflow: compile once, run real or simulated.\n\ncommands:\n";
  for (const Command& command : kCommands) {
    std::string name = command.name;
    out << "  " << name << std::string(10 - name.size(), ' ') << command.summary << "\n";
  }
  out << "\nRun `twinflow <command> --help` for a command's options.\n";
}

int Main(const std::vector<std::string>& argv) {
  if (argv.empty()) {
    PrintUsage(std::cerr);
    return 2;
  }
  const std::string& name = argv[0];
  if (name == "-h" || name == "--help" || name == "help") {
    PrintUsage(std::cout);
    return 0;
  }
  const Command* command = nullptr;
  for (const Command& candidate : kCommands) {
    if (name == candidate.name) command = &candidate;
  }
  if (command == nullptr) {
    std::cerr << "twinflow: error: unknown command '" << name
              << "' (run `twinflow --help` for the list)\n";
    return 2;
  }
  const std::string prefix = std::string("twinflow ") + command->name + ": error: ";
  try {
    const std::vector<std::string> given(argv.begin() + 1, argv.end());
    const bool takes_models = name != "demo" && name != "boxing";
    const std::vector<std::string> args =
        takes_models
            ? ExpandImportedJob(given, name == "tune" ? ImportUse::kTune : ImportUse::kOneStrategy,
                                std::cerr)
            : given;
    return command->run(args, std::cout);
  } catch (const Error& error) {
    std::cerr << prefix << error.message() << "\n";
    return ExitCodeFor(error.kind());
  } catch (const std::exception& error) {
    std::cerr << prefix << "internal error: " << error.what() << "\n";
    return 1;
  } catch (...) {
    std::cerr << prefix << "internal error: unknown exception\n";
    return 1;
  }
}

}  // namespace
}  // namespace twinflow::launcher

int main(int argc, char** argv) {
  return twinflow::launcher::Main(std::vector<std::string>(argv + 1, argv + argc));
}
