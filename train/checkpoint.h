// Checkpoints: fx::save and fx::load write and read any tree of Arrays (parameters, optimizer
// state, batch-norm statistics) by the names of its leaves, in the safetensors format (readable by
// Python's `safetensors`), NumPy's .npz, or .npy for a single array -- chosen by the extension.
//
//   fx::save("ckpt.safetensors", params);
//   Params p2 = fx::load<Params>("ckpt.safetensors");        // or fx::load("ckpt.npz", like)
//
// Leaf names join the path through the tree with dots: a registered struct's field names, map keys,
// tuple and vector positions ("encoder.layers.0.weight"); a lone Array is "arr_0". Writes are atomic
// (temporary file, fsync, rename). Loading checks the file against the tree: a missing or extra name
// is a ValueError, a shape that differs from `like`'s a ShapeError, a dtype a TypeError, an
// unreadable or malformed file an IOError.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/tree.h"

namespace fluxion {

namespace checkpoint_io {

struct Entry {
  std::string name;
  Array array;
};
using Entries = std::vector<Entry>;

/// The dotted names of a tree's leaves, in leaf order.
template <class T>
void leaf_names(const T& t, const std::string& prefix, std::vector<std::string>& out);
template <class T>
std::vector<std::string> leaf_names(const T& t) {
  std::vector<std::string> out;
  leaf_names(t, "", out);
  for (auto& n : out)
    if (n.empty()) n = "arr_0";
  return out;
}

/// By extension: .safetensors, .npz, .npy (exactly one entry).
void write(const std::string& path, const Entries& entries);
Entries read(const std::string& path);

void write_safetensors(const std::string& path, const Entries& entries);
Entries read_safetensors(const std::string& path);
void write_npz(const std::string& path, const Entries& entries);
Entries read_npz(const std::string& path);
void write_npy(const std::string& path, const Array& array);
Array read_npy(const std::string& path);

/// The file's arrays in the order of `names`, checked against `like` (an empty Array accepts any).
std::vector<Array> match(const std::string& path, const Entries& file, const std::vector<std::string>& names,
                         const std::vector<Array>& like);

std::vector<std::string> split_field_names(const char* names);

}  // namespace checkpoint_io

template <class T>
void save(const std::string& path, const T& tree) {
  std::vector<std::string> names = checkpoint_io::leaf_names(tree);
  std::vector<Array> leaves = tree::leaves(tree);
  checkpoint_io::Entries entries;
  for (size_t i = 0; i < leaves.size(); ++i) entries.push_back({names[i], leaves[i]});
  checkpoint_io::write(path, entries);
}

/// `like` gives the structure (and, where its leaves are set, the expected shapes and dtypes).
/// `load<std::map<std::string, Array>>(path)` with no `like` returns every array of the file.
template <class T>
T load(const std::string& path, const T& like = T{}) {
  if constexpr (std::is_same_v<T, std::map<std::string, Array>>) {
    if (like.empty()) {
      T all;
      for (checkpoint_io::Entry& e : checkpoint_io::read(path)) all.emplace(std::move(e.name), std::move(e.array));
      return all;
    }
  }
  std::vector<Array> leaves = checkpoint_io::match(path, checkpoint_io::read(path), checkpoint_io::leaf_names(like),
                                                tree::leaves(like));
  const Array* it = leaves.data();
  return tree::rebuild(like, it);
}

// ---- template definitions ------------------------------------------------------------------------
template <class T>
void checkpoint_io::leaf_names(const T& t, const std::string& prefix, std::vector<std::string>& out) {
  using namespace tree::detail;
  auto child = [&](const std::string& name) { return prefix.empty() ? name : prefix + "." + name; };
  if constexpr (std::is_same_v<T, Array>) {
    out.push_back(prefix);
  } else if constexpr (is_tuple<T>::value) {
    size_t i = 0;
    std::apply([&](const auto&... xs) { (leaf_names(xs, child(std::to_string(i++)), out), ...); }, t);
  } else if constexpr (is_vector<T>::value || is_std_array<T>::value) {
    for (size_t i = 0; i < t.size(); ++i) leaf_names(t[i], child(std::to_string(i)), out);
  } else if constexpr (is_string_map<T>::value) {
    for (const auto& kv : t) leaf_names(kv.second, child(kv.first), out);
  } else if constexpr (is_optional<T>::value) {
    if (t) leaf_names(*t, prefix, out);
  } else if constexpr (registered<T>) {
    std::vector<std::string> fields = split_field_names(fluxion_tree_field_names(static_cast<const T*>(nullptr)));
    size_t i = 0;
    std::apply([&](auto... m) { (leaf_names(t.*m, child(fields[i++]), out), ...); },
               fluxion_tree_members(static_cast<const T*>(nullptr)));
  }
}

}  // namespace fluxion
