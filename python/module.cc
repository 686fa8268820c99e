// The `dtsim` Python module (pybind11): simulate, plan, memory, validate and show, each taking the
// CLI's flags as keyword arguments (underscores for dashes) and returning the dict the CLI's
// --json prints, parsed by Python's json module from the very same text -- so every number is
// bit-identical to the command line's.
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "dtsim/dtsim.h"

namespace py = pybind11;

namespace {

// Flags that take no value: True adds them, False leaves them out.
bool is_switch(const std::string& name) {
  return name == "sp" || name == "verbose" || name == "no-recipes" || name == "csv";
}

// A keyword value as the CLI word: bools on/off (switches aside), numbers and strings as written,
// lists as one comma-separated value (--stage-layers 7,8,8).
std::string word(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "on" : "off";
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    std::string out;
    for (const py::handle& e : v) out += (out.empty() ? "" : ",") + word(e);
    return out;
  }
  return py::str(v).cast<std::string>();
}

std::vector<std::string> flags(const py::kwargs& kw) {
  std::vector<std::string> a;
  for (const auto& [k, v] : kw) {
    std::string name = k.cast<std::string>();
    for (char& c : name)
      if (c == '_') c = '-';
    if (v.is_none()) continue;
    if (name == "fix") {  // fix={"tp": 8} or fix=["tp=8"]
      if (py::isinstance<py::dict>(v))
        for (const auto& [fk, fv] : v.cast<py::dict>()) a.insert(a.end(), {"--fix", word(fk) + "=" + word(fv)});
      else
        for (const py::handle& e : v) a.insert(a.end(), {"--fix", word(e)});
      continue;
    }
    if (is_switch(name)) {
      if (v.cast<bool>()) a.push_back("--" + name);
      continue;
    }
    a.insert(a.end(), {"--" + name, word(v)});
  }
  return a;
}

py::object run(std::vector<std::string> args) {
  std::string text;
  try {
    text = dtsim::run_json(args);
  } catch (const dtsim::Error& e) {
    throw py::value_error(e.what());
  }
  return py::module_::import("json").attr("loads")(text);
}

py::object command(const char* name, const py::kwargs& kw) {
  std::vector<std::string> a{name};
  for (std::string& f : flags(kw)) a.push_back(std::move(f));
  return run(a);
}

}  // namespace

PYBIND11_MODULE(dtsim, m) {
  m.doc() = "dtsim: distributed-training simulator and cost modeler. Keyword arguments are the CLI's flags "
            "(model=, cluster=, gpus=, tp=, pp=, dp=, mbs=, gbs=, seq=, precision=, recompute=, zero=, sp=, ...); "
            "each function returns the dict `dtsim <command> --json` prints. Bad input raises ValueError with "
            "the CLI's message.";
  m.attr("__version__") = dtsim::version();
  m.def("simulate", [](const py::kwargs& kw) { return command("simulate", kw); }, "One training step (dtsim simulate).");
  m.def("plan", [](const py::kwargs& kw) { return command("plan", kw); }, "Layouts ranked (dtsim plan).");
  m.def("memory", [](const py::kwargs& kw) { return command("memory", kw); }, "Per-GPU memory (dtsim memory).");
  m.def(
      "validate",
      [](const std::string& path, const py::kwargs& kw) {
        std::vector<std::string> a{"validate", path};
        for (std::string& f : flags(kw)) a.push_back(std::move(f));
        return run(a);
      },
      py::arg("path"), "Predicted vs measured step times of a dtsim-validation-cases/1 file (dtsim validate).");
  m.def(
      "show",
      [](const std::string& kind, const std::string& name, const py::kwargs& kw) {
        std::vector<std::string> a{"show", kind, name};
        for (std::string& f : flags(kw)) a.push_back(std::move(f));
        return run(a);
      },
      py::arg("kind"), py::arg("name"), "A model, cluster or GPU (dtsim show).");
}
