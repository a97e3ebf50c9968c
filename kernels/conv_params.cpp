// The windowed library calls' params (kernels/conv.h): the fixed order in which lowering/lower_conv.cpp
// encodes an eqn's params into the call's int64 array and the entries read them back.
#include "kernels/conv.h"

#include <cstdint>
#include <span>

#include "ir/shape.h"

namespace fluxion::runtime {

namespace {

enum class Coding { integer, boolean, list, spec, optional_dtype };
struct CodedParam {
  const char* name;
  Coding coding;
};

constexpr CodedParam kConvParams[] = {
    {"window_strides", Coding::list},          {"padding", Coding::list},           {"lhs_dilation", Coding::list},
    {"rhs_dilation", Coding::list},            {"lhs_spec", Coding::spec},          {"rhs_spec", Coding::spec},
    {"out_spec", Coding::spec},                {"feature_group_count", Coding::integer},
    {"batch_group_count", Coding::integer},    {"preferred_element_type", Coding::optional_dtype}};
constexpr CodedParam kWindowParams[] = {{"window_dimensions", Coding::list}, {"window_strides", Coding::list},
                                        {"padding", Coding::list},           {"base_dilation", Coding::list},
                                        {"window_dilation", Coding::list},   {"select_max", Coding::boolean}};

std::span<const CodedParam> coded_params(Prim p) {
  if (p == Prim::conv_general_dilated) return kConvParams;
  if (p == Prim::select_and_gather_add || p == Prim::select_and_scatter_add) return kWindowParams;
  return std::span(kWindowParams).first(5);
}

}  // namespace

void encode_window_params(Prim p, const Params& params, std::vector<int64_t>& out) {
  for (const CodedParam& c : coded_params(p)) {
    switch (c.coding) {
      case Coding::integer: out.push_back(params.get_int(c.name)); break;
      case Coding::boolean: out.push_back(params.get_bool(c.name) ? 1 : 0); break;
      case Coding::optional_dtype: out.push_back(params.has(c.name) ? int64_t(params.get_dtype(c.name)) : -1); break;
      case Coding::list: {
        const IntList& l = params.get_ints(c.name);
        out.push_back(int64_t(l.size()));
        out.insert(out.end(), l.begin(), l.end());
        break;
      }
      case Coding::spec: {  // a permutation of at most 7 dims: its length and 3 bits per entry
        const IntList& l = params.get_ints(c.name);
        int64_t v = 0;
        for (size_t i = l.size(); i-- > 0;) v = v * 8 + l[i];
        out.push_back(v * 8 + int64_t(l.size()));
        break;
      }
    }
  }
}

Params decode_window_params(Prim p, const int64_t*& a) {
  Params params;
  for (const CodedParam& c : coded_params(p)) {
    switch (c.coding) {
      case Coding::integer: params.set(c.name, *a++); break;
      case Coding::boolean: params.set(c.name, *a++ != 0); break;
      case Coding::optional_dtype: {
        const int64_t d = *a++;
        if (d >= 0) params.set(c.name, DType(d));
        break;
      }
      case Coding::list: {
        const int64_t n = *a++;
        params.set(c.name, IntList(a, a + n));
        a += n;
        break;
      }
      case Coding::spec: {
        int64_t v = *a++;
        IntList l(size_t(v % 8));
        v /= 8;
        for (int64_t& d : l) {
          d = v % 8;
          v /= 8;
        }
        params.set(c.name, l);
        break;
      }
    }
  }
  return params;
}

}  // namespace fluxion::runtime
