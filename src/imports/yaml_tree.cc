// libyaml (pyyaml's C core, YAML 1.1) drives the parse; its events are assembled here into a tree.
#include "imports/yaml_tree.h"

#include <yaml.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/errors.h"
#include "core/text.h"
#include "imports/draft.h"

namespace dtsim::imports::yaml {
namespace {

constexpr std::size_t kMaxDepth = 64;

// The parser and one event, released whatever happens (libyaml is a C API).
struct Parser {
  yaml_parser_t p{};
  bool ok = false;
  explicit Parser(const std::string& text) {
    ok = yaml_parser_initialize(&p) != 0;
    if (ok) yaml_parser_set_input_string(&p, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  }
  ~Parser() {
    if (ok) yaml_parser_delete(&p);
  }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;
};

struct Event {
  yaml_event_t e{};
  ~Event() { yaml_event_delete(&e); }
};

int line_of(const yaml_mark_t& m) { return static_cast<int>(std::min<std::size_t>(m.line, 1u << 30)) + 1; }

std::string text_of(const yaml_char_t* s, std::size_t n) {
  return s == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(s), n);
}
std::string text_of(const yaml_char_t* s) {
  return s == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(s));
}

[[noreturn]] void malformed(const yaml_parser_t& p, const std::string& text, const std::string& file) {
  std::string problem = p.problem != nullptr ? p.problem : "a parser error";
  std::size_t line = p.problem_mark.line + 1, column = p.problem_mark.column + 1;
  if (p.error == YAML_READER_ERROR) {  // bad encoding: libyaml gives a byte offset, not a mark
    std::size_t at = std::min(p.problem_offset, text.size());
    std::size_t newline = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
    line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    column = at - (newline == std::string::npos ? 0 : newline + 1) + 1;
  }
  std::string context = p.context != nullptr ? std::string(" (") + p.context + ")" : "";
  throw SpecError(file + ":" + std::to_string(line),
                  "malformed YAML at column " + std::to_string(column) + ": " + problem + context);
}

// Assembles nodes: collections on a stack until their end event, then added to their parent.
class Builder {
 public:
  explicit Builder(std::string file) : file_(std::move(file)) {}

  void scalar(const yaml_event_t& e) {
    auto n = std::make_shared<Node>();
    n->value = text_of(e.data.scalar.value, e.data.scalar.length);
    n->plain = e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    n->line = line_of(e.start_mark);
    if (e.data.scalar.anchor != nullptr) anchors_[text_of(e.data.scalar.anchor)] = n;
    add(n);
  }
  void open(Node::Kind kind, const yaml_event_t& e, const yaml_char_t* anchor) {
    if (stack_.size() >= kMaxDepth)
      fail(line_of(e.start_mark), "expected YAML nested at most " + std::to_string(kMaxDepth) + " deep, got deeper");
    auto n = std::make_shared<Node>();
    n->kind = kind;
    n->line = line_of(e.start_mark);
    stack_.push_back(Frame{n, text_of(anchor), {}, false, {}});
  }
  void close() {
    if (stack_.empty()) return;
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    if (!f.anchor.empty()) anchors_[f.anchor] = f.node;  // complete now: aliases may share it
    add(f.node);
  }
  void alias(const yaml_event_t& e) {
    std::string name = text_of(e.data.alias.anchor);
    auto it = anchors_.find(name);
    if (it == anchors_.end())
      fail(line_of(e.start_mark), "expected an anchor &" + printable(name) + " defined (and closed) before the alias *" +
                                      printable(name) + ", got none");
    add(it->second);
  }
  [[nodiscard]] std::shared_ptr<const Node> result() const {
    if (root_) return root_;
    auto n = std::make_shared<Node>();
    n->plain = true;
    n->line = 1;
    return n;
  }

 private:
  struct Frame {
    std::shared_ptr<Node> node;
    std::string anchor;
    std::set<std::string> keys;
    bool has_key = false;
    std::string key;
  };

  [[noreturn]] void fail(int line, const std::string& message) const {
    throw SpecError(file_ + ":" + std::to_string(line), message);
  }

  void add(const std::shared_ptr<const Node>& n) {
    if (stack_.empty()) {
      if (!root_) root_ = n;
      return;
    }
    Frame& f = stack_.back();
    if (f.node->kind == Node::Kind::sequence) {
      f.node->items.push_back(n);
    } else if (!f.has_key) {
      if (n->kind != Node::Kind::scalar) fail(n->line, "expected a scalar mapping key, got " + describe(*n));
      if (!f.keys.insert(n->value).second)
        fail(n->line, "expected each key once in a mapping, got " + quoted(n->value) + " again");
      f.key = n->value;
      f.has_key = true;
    } else {
      f.node->entries.emplace_back(std::move(f.key), n);
      f.has_key = false;
    }
  }

  std::string file_;
  std::vector<Frame> stack_;
  std::map<std::string, std::shared_ptr<const Node>> anchors_;
  std::shared_ptr<const Node> root_;
};

}  // namespace

const Node* Node::find(const std::string& key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return v.get();
  return nullptr;
}

bool Node::is_null() const {
  return kind == Kind::scalar && plain && (value.empty() || value == "~" || value == "null" || value == "Null" || value == "NULL");
}

std::string describe(const Node& n) {
  if (n.kind == Node::Kind::mapping) return "a mapping";
  if (n.kind == Node::Kind::sequence) return "a sequence";
  return quoted(n.value);
}

std::shared_ptr<const Node> parse(const std::string& text, const std::string& file) {
  Parser parser(text);
  if (!parser.ok) throw SpecError(file, "expected a YAML parser, got none (libyaml could not start)");
  Builder b(file);
  for (;;) {
    Event ev;
    if (yaml_parser_parse(&parser.p, &ev.e) == 0) malformed(parser.p, text, file);
    switch (ev.e.type) {
      case YAML_STREAM_END_EVENT:
      case YAML_DOCUMENT_END_EVENT: return b.result();  // the first document only
      case YAML_SCALAR_EVENT: b.scalar(ev.e); break;
      case YAML_SEQUENCE_START_EVENT: b.open(Node::Kind::sequence, ev.e, ev.e.data.sequence_start.anchor); break;
      case YAML_MAPPING_START_EVENT: b.open(Node::Kind::mapping, ev.e, ev.e.data.mapping_start.anchor); break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: b.close(); break;
      case YAML_ALIAS_EVENT: b.alias(ev.e); break;
      default: break;
    }
  }
}

}  // namespace dtsim::imports::yaml
