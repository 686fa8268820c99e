"""The dtsim Python module (build/python): each function returns the dict the CLI's --json
prints, number for number. Run by ctest with PYTHONPATH=build/python and DTSIM_BINARY set."""
import json
import os
import subprocess
import unittest

import dtsim

BINARY = os.environ["DTSIM_BINARY"]


def cli(*args):
    r = subprocess.run([BINARY, *args, "--json"], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


class ModuleTest(unittest.TestCase):
    def test_simulate_is_the_cli(self):
        got = dtsim.simulate(model="gpt3-175b", cluster="dgx-a100", gpus=1024, tp=8, pp=16, gbs=1536, seq=2048,
                             precision="fp16", recompute="full", zero=0)
        want = cli("simulate", "--model", "gpt3-175b", "--cluster", "dgx-a100", "--gpus", "1024", "--tp", "8",
                   "--pp", "16", "--gbs", "1536", "--seq", "2048", "--precision", "fp16", "--recompute", "full",
                   "--zero", "0")
        self.assertEqual(got["step_time_s"], want["step_time_s"])  # bit-identical floats
        self.assertEqual(got, want)

    def test_keywords_as_flags(self):
        # sp=True is the switch --sp; tp_comm_overlap=False is --tp-comm-overlap off.
        got = dtsim.simulate(model="llama3-8b", cluster="dgx-h100", gpus=8, tp=2, sp=True, gbs=64,
                             tp_comm_overlap=False)
        want = cli("simulate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "2", "--sp",
                   "--gbs", "64", "--tp-comm-overlap", "off")
        self.assertEqual(got, want)

    def test_plan_memory_show(self):
        plan = dtsim.plan(model="llama3-8b", cluster="dgx-h100", gpus=8, gbs=64, top=3, fix={"tp": 2})
        want = cli("plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "64",
                   "--top", "3", "--fix", "tp=2")
        plan.pop("seconds"), want.pop("seconds")  # wall time of the search
        self.assertEqual(plan, want)
        self.assertTrue(all(c["tp"] == 2 for c in plan["configs"]))
        mem = dtsim.memory(model="llama3-70b", cluster="dgx-h100", gpus=64, tp=4, pp=4, gbs=128)
        self.assertIn("peak_bytes_per_gpu", mem["memory"])
        self.assertEqual(dtsim.show("model", "gpt3-175b")["architecture"]["layers"], 96)

    def test_validate(self):
        path = os.path.join(os.environ["DTSIM_SOURCE_DIR"], "tests/fuzz/seeds/validation/three-cases.json")
        self.assertEqual(dtsim.validate(path), cli("validate", path))

    def test_bad_input_raises_value_error(self):
        with self.assertRaisesRegex(ValueError, r"^--tp: expected a divisor of the model's attention heads \(96\), got 7$"):
            dtsim.simulate(model="gpt3-175b", cluster="dgx-a100", gpus=112, tp=7, pp=16, gbs=1536)
        with self.assertRaisesRegex(ValueError, "--model: expected a preset name"):
            dtsim.simulate(model="no-such-model", cluster="dgx-a100", gpus=8, gbs=8)


if __name__ == "__main__":
    unittest.main()
