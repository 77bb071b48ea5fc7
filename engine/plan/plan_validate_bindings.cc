// Feed, fetch and variable bindings: named logical tensors assembled from register regions.
#include <string>

#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_validate_internal.h"

namespace twinflow::plan::validation {

void Validator::CheckBindings() const {
  for (const auto* list : {&plan_.feeds(), &plan_.fetches(), &plan_.variables()}) {
    for (const Binding& binding : *list) {
      const auto what = [&] { return "binding '" + Clip(binding.name()) + "'"; };
      if (binding.name().empty()) Fail("a binding has no name");
      TensorBytes(binding.logical(), what() + " logical tensor");
      FromProto(binding.reduce(), what());
      for (int i = 0; i < binding.parts_size(); ++i) {
        const BindingPart& part = binding.parts(i);
        const std::string which = what() + " part " + Str(i);
        if (part.regst() < 0 || part.regst() >= plan_.regsts_size() || IsControl(part.regst())) {
          Fail(which + " names regst " + Str(part.regst()) + ", which is not a data register");
        }
        const TensorDesc& held = plan_.regsts(part.regst()).tensor();
        if (held.dtype() != binding.logical().dtype() ||
            held.shape_size() != binding.logical().shape_size()) {
          Fail(which + ": " + RegstText(part.regst()) + " holds " + DescText(held) +
               ", which does not fit the logical " + DescText(binding.logical()));
        }
        CheckRegion(part.region(), &binding.logical(), held, which + " region");
      }
    }
  }
}

}  // namespace twinflow::plan::validation
