#pragma once
// dtsim's public C++ API: everything `dtsim` does from the command line, as value types and
// functions. Link `dtsim::dtsim` (find_package(dtsim)). Results carry the same numbers as the
// CLI's --json output (they are read from it) and that JSON itself.
#include "dtsim/errors.h"
#include "dtsim/job.h"
#include "dtsim/results.h"
#include "dtsim/run.h"
