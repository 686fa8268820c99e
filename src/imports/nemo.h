#pragma once
// Internal to src/imports: reading a NeMo / Megatron-Bridge recipe by dotted path
// (nemo_recipe.cc), its job settings (nemo.cc) and its model shape (nemo_shape.cc).
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "imports/draft.h"
#include "imports/yaml_tree.h"

namespace dtsim::imports::nemo {

using Paths = std::vector<std::string>;

/// A recipe's values by dotted path ("model.tensor_model_parallel_size"). A value that is exactly
/// an OmegaConf interpolation -- ${model.seq_length} or relative ${.seq_length} -- reads as what it
/// points to; resolvers (${oc.env:X}) are not followed. Remembers what was read.
class Recipe {
 public:
  Recipe(std::shared_ptr<const yaml::Node> root, std::string file);

  /// A value found: the node and the path it was found at.
  struct Found {
    const yaml::Node* node = nullptr;
    std::string path;
  };
  /// The first of `paths` present and not null.
  std::optional<Found> find(const Paths& paths);
  /// An integer in [min, max] (plain YAML, e.g. 8 or 1_024), or nullopt when absent or null.
  std::optional<std::int64_t> integer(const Paths& paths, std::int64_t min, std::int64_t max);
  /// As integer(), with where it was given, for the model's shape.
  std::optional<Sized> sized(const Paths& paths, std::int64_t min, std::int64_t max);
  /// A probability in [0, 1) (plain YAML number), or nullopt when absent or null.
  std::optional<double> probability(const Paths& paths);
  /// true/false (also True, yes, on ... as YAML 1.1 reads them), or nullopt.
  std::optional<bool> boolean(const Paths& paths);
  /// A scalar's text, or nullopt.
  std::optional<std::string> text(const Paths& paths);
  /// One of `choices`, or nullopt.
  std::optional<std::string> choice(const Paths& paths, std::initializer_list<const char*> choices);
  /// The node at `path` without marking it read (to see what kind of value a key holds).
  [[nodiscard]] const yaml::Node* peek(const std::string& path) const { return lookup(path); }
  /// Whether `key` is a top-level section.
  [[nodiscard]] bool has(const std::string& key) const;
  /// "FILE:LINE" of a found value.
  [[nodiscard]] std::string where(const Found& f) const;
  [[noreturn]] void fail(const Found& f, const std::string& message) const;
  /// Lists each key never read, of the sections that were looked into, in `out.ignored`.
  void ignore_rest(Imported& out) const;
  [[nodiscard]] const std::string& file() const { return file_; }

 private:
  [[nodiscard]] const yaml::Node* lookup(const std::string& path) const;
  [[nodiscard]] const yaml::Node* resolve(const yaml::Node* n, const std::string& path) const;
  void walk(const yaml::Node& n, const std::string& prefix, Imported& out) const;

  std::shared_ptr<const yaml::Node> root_;
  std::string file_;
  std::set<std::string> read_;      ///< paths whose values were used
  std::set<std::string> sections_;  ///< every prefix of a path looked up
};

/// A plain YAML 1.1 boolean (true, True, yes, on, false, ...), or nullopt.
[[nodiscard]] std::optional<bool> yaml_bool(const yaml::Node& n);

/// `key` under each place a recipe may hold model settings: model.KEY (NeMo 1.x, Megatron-Bridge)
/// and model.config.KEY (NeMo 2.0).
[[nodiscard]] Paths model_paths(const std::string& key);

/// `a` followed by `b`: several places a key may be, tried in order.
[[nodiscard]] Paths join_paths(Paths a, const Paths& b);

/// The model's shape, with Megatron-Core's defaults for absent keys (nemo_shape.cc).
[[nodiscard]] ModelDraft read_shape(Recipe& r, Imported& out);

}  // namespace dtsim::imports::nemo
