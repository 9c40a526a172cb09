#pragma once
// A run config's kernel read into a KernelSpec, its params checked against the op's declaration
// in the registry, and the work-size check every kernel passes before anything is allocated.

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/spec/kernel_spec.hpp"

namespace tilesim {

// Keys a run config may hold besides the kernel's (the caller consumes them).
KernelSpec kernel_spec_from_json(const nlohmann::json& doc, const std::string& origin,
                                 const std::set<std::string>& caller_keys);

// Refuses, before anything is allocated, a kernel whose tensor or tile is larger than any device
// (kMaxTensorBytes) or whose work cuts into more sub-tiles than max_tasks(); a family's
// tensors_of names the tensors its shape stands for. Throws tilesim::Error (kind limits) naming
// the key (in `origin`, or the op) and the figures.
void check_work_size(const KernelSpec& spec, const std::string& origin);

}  // namespace tilesim
