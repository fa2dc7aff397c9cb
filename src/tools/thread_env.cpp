// Note [OpenMP wait policy]
// GNU OpenMP (libgomp, the runtime oneDNN is built with) makes idle team threads spin for
// GOMP_SPINCOUNT iterations (300,000 by default) before they sleep. On a machine whose other
// cores are busy that is the worst choice: a worker that shares its core with another process
// burns its time slice spinning, the scheduler then favors the other process, and every parallel
// region waits for that worker (issue 13: resnet50 at 2 threads took 4x longer than at 1 thread
// with one of two cores busy; a tiny CNN 2000x). And after a call returns the workers keep a core
// busy for nothing (onnxruntime#11841). OMP_WAIT_POLICY=PASSIVE makes idle threads sleep at once.
//
// libgomp reads its settings once, in its own ELF constructor, before main() runs, and reads
// them from the environment block the kernel handed to the process: setenv() from the
// executable's .preinit_array (which runs before any library constructor) is undone when libc's
// own initializer resets `environ` to that block. So when the user set neither OMP_WAIT_POLICY
// nor GOMP_SPINCOUNT, the preinit function lends the block's last non-OpenMP slot to
// "OMP_WAIT_POLICY=PASSIVE" while the libraries initialize, and a constructor of the executable
// (which runs after every library's) gives the slot back: the environment main() and child
// processes see is the user's, untouched. A user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
// Programs that embed the torchless libraries should set OMP_WAIT_POLICY=PASSIVE themselves.
#include <cstring>

namespace {

char kPassive[] = "OMP_WAIT_POLICY=PASSIVE";
char** gLentSlot = nullptr;
char* gLentValue = nullptr;

bool hasVariable(char** envp, const char* prefix) {
  const size_t n = std::strlen(prefix);
  for (char** e = envp; *e != nullptr; ++e)
    if (std::strncmp(*e, prefix, n) == 0) return true;
  return false;
}

void lendSlot(int, char**, char** envp) {
  if (envp == nullptr || envp[0] == nullptr) return;
  if (hasVariable(envp, "OMP_WAIT_POLICY=") || hasVariable(envp, "GOMP_SPINCOUNT=")) return;
  // The last variable that is not an OpenMP one (OMP_DISPLAY_ENV must stay visible).
  char** slot = nullptr;
  for (char** e = envp; *e != nullptr; ++e)
    if (std::strncmp(*e, "OMP_", 4) != 0 && std::strncmp(*e, "GOMP_", 5) != 0) slot = e;
  if (slot == nullptr) return;
  gLentSlot = slot;
  gLentValue = *slot;
  *slot = kPassive;
}

__attribute__((constructor)) void giveSlotBack() {
  if (gLentSlot != nullptr && *gLentSlot == kPassive) *gLentSlot = gLentValue;
  gLentSlot = nullptr;
}

}  // namespace

__attribute__((section(".preinit_array"),
               used)) void (*const kTorchlessPreinit)(int, char**, char**) = &lendSlot;
