#include "interpreters/replication.h"

#include <algorithm>

namespace fluxion {

namespace {

// Axis sets as bit masks over the mesh's axes.
using Mask = uint64_t;

struct Walker {
  const AxisList& axes;

  Mask bit(const Params& p) const {
    if (!p.has("axis_name")) return 0;
    const std::string& name = p.get<std::string>("axis_name");
    for (size_t a = 0; a < axes.size(); ++a)
      if (axes[a] == name) return Mask(1) << a;
    return 0;  // a vmap's axis inside the body: not a mesh axis
  }

  // Every axis a collective inside `p` (at any depth) makes values differ along.
  Mask introduced(const Program& p) const {
    Mask m = 0;
    for (const Eqn& e : p.eqns) {
      switch (e.prim) {
        case Prim::axis_index:
        case Prim::ppermute:
        case Prim::psum_scatter:
        case Prim::all_to_all: m |= bit(e.params); break;
        case Prim::shard_map: m |= ~Mask(0); break;
        default: break;
      }
      any_sub_program(e, [&](const Program& q) {
        m |= introduced(q);
        return false;
      });
    }
    return m;
  }

  std::vector<Mask> run(const Program& p, const std::vector<Mask>& in) const {
    std::vector<Mask> v(p.types.size(), 0);
    for (size_t i = 0; i < p.invars.size() && i < in.size(); ++i) v[size_t(p.invars[i])] = in[i];
    for (const Eqn& e : p.eqns) {
      std::vector<Mask> ins;
      for (const Atom& a : e.inputs) ins.push_back(a.is_literal() ? 0 : v[size_t(a.var)]);
      const std::vector<Mask> outs = eqn(e, ins);
      for (size_t k = 0; k < e.outputs.size(); ++k) v[size_t(e.outputs[k])] = outs[k];
    }
    std::vector<Mask> out;
    for (const Atom& a : p.outvars) out.push_back(a.is_literal() ? 0 : v[size_t(a.var)]);
    return out;
  }

  static Mask all_of(const std::vector<Mask>& xs, size_t from = 0, size_t to = size_t(-1)) {
    Mask m = 0;
    for (size_t i = from; i < std::min(to, xs.size()); ++i) m |= xs[i];
    return m;
  }

  std::vector<Mask> eqn(const Eqn& e, const std::vector<Mask>& in) const {
    const size_t nout = e.outputs.size();
    switch (e.prim) {
      case Prim::psum:
      case Prim::pmean:
      case Prim::pmax:
      case Prim::pmin:
      case Prim::all_gather: return {in[0] & ~bit(e.params)};
      case Prim::axis_index: return {bit(e.params)};
      case Prim::ppermute:
      case Prim::psum_scatter:
      case Prim::all_to_all: return {in[0] | bit(e.params)};
      case Prim::cond: return cond(e, in);
      case Prim::scan: return scan(e, in);
      case Prim::while_: return while_loop(e, in);
      case Prim::checkpoint: return run(*e.params.get<ProgramRef>("program"), in);
      default: break;
    }
    Mask m = all_of(in);
    any_sub_program(e, [&](const Program& q) {
      m |= introduced(q);
      return false;
    });
    return std::vector<Mask>(nout, m);
  }

  std::vector<Mask> cond(const Eqn& e, const std::vector<Mask>& in) const {
    const std::vector<Mask> ops(in.begin() + 1, in.end());
    std::vector<Mask> out(e.outputs.size(), in[0]);  // a branch chosen per device differs with the index
    for (const ProgramRef& b : e.params.get<ProgramList>("branches")) {
      const std::vector<Mask> r = run(*b, ops);
      for (size_t k = 0; k < out.size(); ++k) out[k] |= r[k];
    }
    return out;
  }

  // consts... carry... xs...: the carry's axes grow until the body keeps them.
  std::vector<Mask> scan(const Eqn& e, const std::vector<Mask>& in) const {
    const Program& body = *e.params.get<ProgramRef>("body");
    const size_t nc = size_t(e.params.get_int("num_consts")), nk = size_t(e.params.get_int("num_carry"));
    std::vector<Mask> x = in;
    if (e.params.get_int("length") == 0) {  // the carry as it came in, no ys to speak of
      std::vector<Mask> out(in.begin() + long(nc), in.begin() + long(nc + nk));
      out.resize(e.outputs.size(), 0);
      return out;
    }
    for (;;) {
      const std::vector<Mask> r = run(body, x);
      bool grew = false;
      for (size_t k = 0; k < nk; ++k)
        if ((r[k] | x[nc + k]) != x[nc + k]) x[nc + k] |= r[k], grew = true;
      if (!grew) return r;
    }
  }

  // cond_consts... body_consts... carry...: as scan, and a trip count that differs between
  // devices makes every carry differ along the condition's axes.
  std::vector<Mask> while_loop(const Eqn& e, const std::vector<Mask>& in) const {
    const Program& c = *e.params.get<ProgramRef>("cond");
    const Program& body = *e.params.get<ProgramRef>("body");
    const size_t nc = size_t(e.params.get_int("cond_nconsts")), nb = size_t(e.params.get_int("body_nconsts"));
    std::vector<Mask> carry(in.begin() + long(nc + nb), in.end());
    for (;;) {
      std::vector<Mask> cin(in.begin(), in.begin() + long(nc)), bin(in.begin() + long(nc), in.begin() + long(nc + nb));
      cin.insert(cin.end(), carry.begin(), carry.end());
      bin.insert(bin.end(), carry.begin(), carry.end());
      const Mask trips = run(c, cin)[0];
      const std::vector<Mask> r = run(body, bin);
      bool grew = false;
      for (size_t k = 0; k < carry.size(); ++k) {
        const Mask next = carry[k] | r[k] | trips;
        if (next != carry[k]) carry[k] = next, grew = true;
      }
      if (!grew) return carry;
    }
  }
};

}  // namespace

std::vector<AxisList> varying_axes(const Program& body, const std::vector<AxisList>& in, const AxisList& mesh_axes) {
  Walker w{mesh_axes};
  std::vector<Mask> masks;
  for (const AxisList& l : in) {
    Mask m = 0;
    for (size_t a = 0; a < mesh_axes.size(); ++a)
      if (std::find(l.begin(), l.end(), mesh_axes[a]) != l.end()) m |= Mask(1) << a;
    masks.push_back(m);
  }
  std::vector<AxisList> out;
  for (Mask m : w.run(body, masks)) {
    AxisList l;
    for (size_t a = 0; a < mesh_axes.size(); ++a)
      if (m & (Mask(1) << a)) l.push_back(mesh_axes[a]);
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace fluxion
