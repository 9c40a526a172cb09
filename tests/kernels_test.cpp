// kernels/: task graphs a hand count gives, and input validation.
#include <gtest/gtest.h>

#include "kernels/lowering.hpp"
#include "model/error.hpp"
#include "test_support.hpp"

namespace tilesim {
namespace {

using test::default_hw;

KernelSpec spec(const std::string& op, Dims shape, Dims tile, DType dt = DType::kFp32) {
  KernelSpec s;
  s.op = op;
  s.shape = std::move(shape);
  s.tile = std::move(tile);
  s.dtype = dt;
  return s;
}

std::string lower_error(const KernelSpec& s) {
  try {
    lower_kernel(s, default_hw());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Kernels, AddPyptoHandCount) {
  KernelSpec s = spec("add", {100, 1000}, {8, 256});
  s.loop_count = 4;  // chunks of 25 rows: tiles 8,8,8,1 rows x 256,256,256,232 cols
  const LoweredKernel k = lower_kernel(s, default_hw());
  EXPECT_EQ(k.graph.tasks.size(), 4u * 4 * 4);
  EXPECT_EQ(k.graph.num_roots(), 4);
  double read = 0, write = 0, elems = 0;
  for (const auto& t : k.graph.tasks) {
    const auto& st = k.graph.kinds[static_cast<size_t>(t.kind)].steps.front();
    for (const auto& l : st.loads) read += static_cast<double>(l.bytes());
    for (const auto& w : st.stores) write += static_cast<double>(w.bytes());
    for (const auto& v : st.vec) elems += static_cast<double>(v.batch * v.rows * v.cols);
  }
  EXPECT_EQ(read, 2.0 * 100 * 1000 * 4);
  EXPECT_EQ(write, 100.0 * 1000 * 4);
  EXPECT_EQ(elems, 100.0 * 1000);
  EXPECT_EQ(k.diag.auto_tiles, 13 * 4);
  EXPECT_EQ(k.diag.contiguous_bytes, 1024);
}

TEST(Kernels, AscendCPartitionSplitsTilesEvenly) {
  KernelSpec s = spec("copy_in", {12288, 12288}, {64, 1024}, DType::kFp16);
  s.partition = PartitionStyle::kAscendC;
  s.cores = 48;
  const LoweredKernel k = lower_kernel(s, default_hw());
  ASSERT_EQ(k.graph.tasks.size(), 48u);
  for (const auto& t : k.graph.tasks) {
    const auto& kind = k.graph.kinds[static_cast<size_t>(t.kind)];
    ASSERT_EQ(kind.steps.size(), 1u);
    EXPECT_EQ(kind.steps[0].repeat, 48);  // 192 row blocks x 12 col blocks / 48 cores
    EXPECT_EQ(kind.steps[0].loads[0].bursts, 64);
    EXPECT_EQ(kind.steps[0].loads[0].burst_bytes, 2048);
  }
}

TEST(Kernels, BadInputIsOneClearError) {
  EXPECT_NE(lower_error(spec("softmaxx", {16, 16}, {16, 16})).find("unknown op 'softmaxx'"),
            std::string::npos);
  EXPECT_NE(lower_error(spec("add", {16, 16}, {16})).find("rank"), std::string::npos);
  const std::string mis = lower_error(spec("add", {16, 100}, {1, 7}));
  EXPECT_NE(mis.find("misaligned"), std::string::npos) << mis;
  EXPECT_NE(mis.find("multiple of 8 elements"), std::string::npos) << mis;
  const std::string ub = lower_error(spec("add", {64, 16384}, {4, 16384}));
  EXPECT_NE(ub.find("needs"), std::string::npos) << ub;
  EXPECT_NE(ub.find("has 196608 B"), std::string::npos) << ub;
  KernelSpec loop = spec("add", {4, 64}, {1, 64});
  loop.loop_count = 5;
  EXPECT_NE(lower_error(loop).find("loop_count 5 exceeds"), std::string::npos);
}

TEST(Kernels, LimitsAreReportedNotEnforced) {
  const LoweredKernel k = lower_kernel(spec("add", {4096, 4096}, {1, 32768 / 4}), default_hw());
  ASSERT_EQ(k.diag.limit_violations.size(), 1u);
  EXPECT_NE(k.diag.limit_violations[0].find("auto_tiles"), std::string::npos);
  const LoweredKernel big = lower_kernel(spec("add", {128, 4096}, {1, 16384}), default_hw());
  EXPECT_EQ(big.diag.tile_exceeds_shape, std::vector<int>{1});
}

}  // namespace
}  // namespace tilesim
