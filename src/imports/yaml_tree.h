#pragma once
// Internal to src/imports: the first document of a YAML file as a tree of scalars, sequences and
// mappings with their source lines, built from libyaml's parser events (libyaml parses; this only
// assembles). Aliases share the anchored node instead of copying it, so `&a [*a, *a, ...]` chains
// cost no memory; an alias to a node that is still open (a cycle) is rejected.
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dtsim::imports::yaml {

struct Node {
  enum class Kind { scalar, sequence, mapping };
  Kind kind = Kind::scalar;
  std::string value;  ///< a scalar's text
  bool plain = false;  ///< an unquoted scalar: only those read as null, booleans or numbers
  int line = 0;        ///< 1-based line where the node starts
  std::vector<std::pair<std::string, std::shared_ptr<const Node>>> entries;  ///< a mapping's, in order
  std::vector<std::shared_ptr<const Node>> items;                             ///< a sequence's

  /// The value of mapping key `key`, or nullptr.
  [[nodiscard]] const Node* find(const std::string& key) const;
  /// A plain null scalar (~, null, empty).
  [[nodiscard]] bool is_null() const;
};

/// Parses the first document of `text` (an empty text gives a null scalar). Throws
/// SpecError("FILE:LINE", ...) for malformed YAML (libyaml's reason), a key given twice in one
/// mapping, a non-scalar key, an undefined or cyclic alias, or nesting deeper than 64.
[[nodiscard]] std::shared_ptr<const Node> parse(const std::string& text, const std::string& file);

/// "a mapping", "a sequence", or the scalar quoted, for error messages.
[[nodiscard]] std::string describe(const Node& n);

}  // namespace dtsim::imports::yaml
