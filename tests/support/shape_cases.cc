// Random instances of the shape ops: small shapes, extents often not divisible by 2 or 3.
#include <algorithm>

#include "tests/support/case_helpers.h"
#include "tests/support/op_cases.h"

namespace twinflow::testing {
namespace {

using graph::TensorMeta;

// A target shape with the same element count: adjacent axes merged, an axis split into two
// factors, a unit axis inserted, everything flattened, or one extent left as -1.
std::vector<int64_t> RandomReshape(const std::vector<int64_t>& in, Rng& rng) {
  std::vector<int64_t> out = in;
  const int rank = static_cast<int>(in.size());
  switch (rng.UniformInt(0, 4)) {
    case 0:
      if (rank >= 2) {
        const int a = static_cast<int>(rng.UniformInt(0, rank - 2));
        out[a] *= out[a + 1];
        out.erase(out.begin() + a + 1);
      }
      break;
    case 1: {
      const int a = static_cast<int>(rng.UniformInt(0, rank - 1));
      for (int64_t f = 2; f < out[a]; ++f) {
        if (out[a] % f == 0) {
          const int64_t rest = out[a] / f;
          out[a] = f;
          out.insert(out.begin() + a + 1, rest);
          break;
        }
      }
      break;
    }
    case 2:
      out.insert(out.begin() + rng.UniformInt(0, rank), 1);
      break;
    case 3: {
      int64_t n = 1;
      for (int64_t d : in) n *= d;
      out = {n};
      break;
    }
    default:
      out[rng.UniformInt(0, rank - 1)] = -1;
      break;
  }
  return out;
}

OpInstance Reshape(Rng& rng) {
  // Sometimes a hidden axis made of heads x head_dim, as attention splits it.
  std::vector<int64_t> in = RandomDims(rng, 1, 3);
  if (rng.UniformInt(0, 2) == 0) in.push_back(rng.UniformInt(1, 3) * rng.UniformInt(1, 3));
  return OpInstance{"reshape", Attrs{{"shape", RandomReshape(in, rng)}}, {F32(in)}, {}, {}};
}

OpInstance Transpose(Rng& rng) {
  const std::vector<int64_t> in = RandomDims(rng, 1, 4, 5);
  std::vector<int64_t> perm(in.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.UniformInt(0, i - 1)]);
  return OpInstance{"transpose", Attrs{{"perm", perm}}, {F32(in)}, {}, {}};
}

// begin/end per axis, about half the axes kept whole.
Attrs RandomSlice(const std::vector<int64_t>& in, Rng& rng) {
  std::vector<int64_t> begin, end;
  for (int64_t d : in) {
    if (rng.UniformInt(0, 1) == 0) {
      begin.push_back(0);
      end.push_back(d);
    } else {
      const int64_t b = rng.UniformInt(0, d);
      begin.push_back(b);
      end.push_back(rng.UniformInt(b, d));
    }
  }
  return Attrs{{"begin", begin}, {"end", end}};
}

OpInstance Slice(Rng& rng) {
  const std::vector<int64_t> in = RandomDims(rng, 1, 3);
  return OpInstance{"slice", RandomSlice(in, rng), {F32(in)}, {}, {}};
}

OpInstance SliceGrad(Rng& rng) {
  const std::vector<int64_t> full = RandomDims(rng, 1, 3);
  Attrs attrs = RandomSlice(full, rng);
  std::vector<int64_t> dy;
  for (size_t i = 0; i < full.size(); ++i) {
    dy.push_back(attrs.GetInts("end")[i] - attrs.GetInts("begin")[i]);
  }
  attrs.Set("shape", full);
  return OpInstance{"slice_grad", attrs, {F32(dy)}, {}, {}};
}

OpInstance Concat(Rng& rng) {
  const std::vector<int64_t> base = RandomDims(rng, 1, 3, 5);
  const int64_t axis = rng.UniformInt(0, static_cast<int64_t>(base.size()) - 1);
  OpInstance instance{"concat", Attrs{{"axis", axis}}, {}, {}, {}};
  const int64_t count = rng.UniformInt(1, 3);
  for (int64_t i = 0; i < count; ++i) {
    std::vector<int64_t> dims = base;
    dims[axis] = rng.UniformInt(1, 4);
    instance.inputs.push_back(F32(dims));
  }
  return instance;
}

}  // namespace

std::vector<OpCase> ShapeCases() {
  return {{"reshape", Reshape},
          {"transpose", Transpose},
          {"slice", Slice},
          {"slice_grad", SliceGrad},
          {"concat", Concat}};
}

}  // namespace twinflow::testing
