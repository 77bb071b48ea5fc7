#pragma once
// The processes a `twinflow tune` shares its candidates among, and the one exchange they need
// after each batch: every member's text, gathered in member order, on every member. Three
// forms: one process alone; the ranks of an mpirun job (launcher/mpi_tune_group.h, over
// comm::AllgatherText); or `--jobs N`
// processes forked from this one, which exchange over pipes through the first (member 0, the
// process that was started). Any form gathers the same outcomes in the same order, so the
// ranking is bit for bit one process's.
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace twinflow::planner {

class TuneGroup {
 public:
  virtual ~TuneGroup() = default;
  int member() const { return member_; }
  int size() const { return size_; }
  // How the summary names the members ("ranks", "processes") and the progress lines one
  // ("rank", "job").
  virtual const char* noun() const = 0;
  virtual const char* member_noun() const = 0;
  // Every member's `mine`, in member order (a lone process: its own).
  virtual std::vector<std::string> Allgather(const std::string& mine) = 0;

 protected:
  TuneGroup(int member, int size) : member_(member), size_(size) {}

 private:
  int member_, size_;
};

// This process alone.
std::unique_ptr<TuneGroup> LoneTune();

// `jobs` processes: this one (member 0) and jobs - 1 forked from it, each returning from here
// with its own group. Flush what was printed before calling (a child inherits unflushed
// output). A member that dies, or whose pipe breaks, makes the others' next Allgather throw a
// CommError naming it. The group of member 0 reaps the children when destroyed; a child must
// end with EndForkedChild, never return to main.
std::unique_ptr<TuneGroup> ForkTune(int jobs);

// Ends a forked member (not member 0): exits 0 at once, running no destructors or exit
// handlers, since everything after the evaluation (the ranking, the JSON) is member 0's.
[[noreturn]] void EndForkedChild();

// The processes `--jobs` defaults to: this machine's cores, at most `most` and one per 2 GiB of
// its memory.
int DefaultJobs(int most);

}  // namespace twinflow::planner
