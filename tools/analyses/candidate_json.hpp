#pragma once
// An evaluated sweep candidate as JSON, losslessly: every figure the evaluation produced (the
// Metrics record, the rulebook figures, the lowering's diagnostics, the spmd figures), so that a
// sweep rebuilt from shard files ranks, zones and reports exactly as the sweep that evaluated
// them (doubles round-trip exactly through nlohmann/json). Zones, series and the axis value are
// not stored: rank_sweep derives them. Per-core records are arrays (48 cores per candidate).

#include <nlohmann/json.hpp>
#include <string>

#include "tools/analyses/sweep.hpp"
#include "tools/formats/byte_record.hpp"

namespace tilesim {

nlohmann::json candidate_to_json(const CandidateResult& c);
// `origin` names the file in the one-line error a malformed record gives.
CandidateResult candidate_from_json(const nlohmann::json& j, const std::string& origin);

// The same record as bytes (tools/formats/byte_record.hpp: for one tilesim build only), every
// figure bit for bit, without building a JSON tree: how Dask chunks travel. The figures read back
// are checked as candidate_from_json checks them.
void write_candidate_bytes(ByteWriter& out, const CandidateResult& c);
CandidateResult candidate_from_bytes(ByteReader& in, const std::string& origin);

}  // namespace tilesim
