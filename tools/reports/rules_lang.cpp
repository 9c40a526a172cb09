#include "tools/reports/rules_lang.hpp"

#include <map>

#include "model/error.hpp"

namespace tilesim {

namespace {

struct Zh {
  const char* claim;
  const char* why = nullptr;  // null: the check's own reason stays (English)
};

// Each claim as the rulebook's Chinese would state it.
const std::map<std::string, Zh>& zh_claims() {
  static const std::map<std::string, Zh> t = {
      {"rule1.contiguous", {"规则 1.1：连续搬运不足 1 KB 的候选，输给达标候选中最好的一个"}},
      {"rule1.knee",
       {"规则 1.1：DMA 效率在约 1 KB 连续搬运处进入平台（FP32 tile[-1] >= 256，FP16/BF16 >= "
        "512）"}},
      {"rule1.tile_over_shape",
       {"规则 1.2：tile 大于对应维度会被标记，浪费 tile 预算（比维度内的候选更慢）"}},
      {"rule1.reduction_axis_u",
       {"规则 1.3：达到 1 KB 之后，归约轴并非越大越好：16 / 32 / 64 需要比较找甜点"}},
      {"rule1.non_reduction_growth",
       {"规则 1.4：达到 1 KB 之后，继续增大非归约轴没有收益（目标是减少归约分段）"}},
      {"rule1.example_a", {"示例 A：softmax (16, 16384)：(1, 8192) 优于 (2, 4096) 和 (4, 4096)"}},
      {"rule1.example_b",
       {"示例 B：sum (16, 64, 256, 256) dim 1：(1, 1, 16, 256) 慢于所有 (1, 16|32|64, 1, "
        "256)；三者之间找甜点"}},
      {"rule1.example_c",
       {"示例 C：triplet 第一阶段 (128, 4096)：(4, 4096) 优于被标记 tile > shape 的 (1, 16384)"}},
      {"rule1.example_d",
       {"示例 D：amax (16, 256, 256) dim 1：(1, 16, 256) 最快；(1, 256, 64) 不足 1 KB 且更慢"}},
      {"rule1.example_e",
       {"示例 E：(16, 256, 256) 上的 (1, 32, 512) 被标记 tile > shape，相比 (1, 32, 256) "
        "毫无收益"}},
      {"rule2.u_shape",
       {"规则 2：gen_time 随 loop_count 呈 U "
        "形：循环太少过粗（任务过重），太多过碎（调度等待），中间最优"}},
      {"rule2.groupnorm_evidence",
       {"规则 2 证据：GroupNorm 实测最优为 loop 16，8 和 32 紧随其后，64 和 128 过碎"}},
      {"rule2.matmul",
       {"规则 2 矩阵乘：由中间 loop_count（16/32）推导的 BASIC_BATCH 优于固定的 128 和 256，各 m "
        "皆然"}},
      {"rule3.merge",
       {"规则 3：通过 reshape 合并相邻归约轴，优于串联的单轴归约（两种写法各取同一候选集中的最优 "
        "tile）"}},
      {"rule4.phase2_contiguous",
       {"规则 4：第二阶段自己满足规则 1 的连续性：其逐样本值的 tile 达到约 1 KB（256 个 "
        "FP32）后才追平最优",
        "第二阶段每个 t 值的 tile 都要付出其归约指令（每条 vector.issue_cycles，[t, 1] "
        "列按 UB 块逐行归约）和一次累加写出，与 t 无关：小 tile 要付 N / t 次；越过拐点后，每个 "
        "tile 更多的值只会拉长任务。批量较小时第二阶段一直受益到单个 tile（任务本来就少）；"
        "第一阶段较重时（每个样本 128 个特征），第二阶段占比小，更少的值就能追平最优"}},
      {"rule4.phase2_own_tile",
       {"规则 4：第二阶段的 tile 独立选择：其最优不随第一阶段的 tile "
        "变化；照搬第一阶段较少的行数会变慢",
        "第二阶段在第一阶段所有任务之后，从 GM 读取第一阶段写出的逐样本向量：它的 tile "
        "决定自己的搬运和任务数，第一阶段的 tile 不会传递过来"}},
      {"rule4.phase2_merge",
       {"规则 "
        "4：第二阶段的部分结果最好由其自身任务原子累加进结果，而不是交给单独的合并任务（树形）；"
        "树形合并的代价随部分结果数增长",
        "原子合并是每个第二阶段任务一次累加写出；树形合并每折半一层就多一层合并任务，每个任务一次调"
        "度、"
        "两次部分结果读入和一次写出，并等待其配对任务"}},
      {"rule4.loop_merge",
       {"规则 4：对第一阶段加循环不改变第二阶段的合并方式：每个 loop_count "
        "下胜出的合并方式相同、代价相同，两种合并方式下的最优 "
        "loop_count 也相同",
        "第二阶段在循环之外，它的每个 tile "
        "等待写出其行的第一阶段任务：无论如何分块，树形合并都要多出合并任务（每个一次调度、两次部分"
        "结果读入、一次写出），"
        "所以每个 loop_count 下胜出的合并方式相同，loop_count 只权衡第一阶段的粒度（规则 "
        "2）；树形合并有多少能藏在最后几块的第一阶段后面，随分块而变"}},
      {"rule4.phase_fusion",
       {"规则 4：SPMD 下把第二阶段并入第一阶段的 block（一次启动，每个 block "
        "累加其样本的份额）：优于把第二阶段作为单独的 "
        "kernel，批量越小优势越大",
        "第二个 kernel 要付出启动（kernel.vector_launch_us）、其 block 的启动以及对 GM "
        "中逐样本向量的一遍读取；并入后每个 "
        "block 归约自己在 UB 中的值并做一次原子加。第一阶段的时间随批量增长，第二个 kernel "
        "几乎不变"}},
      {"rule5.stable_softmax",
       {"规则 5：行能被一个 tile 覆盖时，稳定 softmax 的 max 遍历代价很小；行被切分后它成为对 x "
        "的单独一遍，除非 max 与 sum 在同一遍完成",
        "tile 覆盖整行时，max 只是对 UB 中数据多做一次归约；行被切分时 amax "
        "的阶段在此结束（其部分结果跨 "
        "tile 合并），之后的算子要再次从 GM 读 x；sumexp 的滑动最大值（算子表的 X10）把 max "
        "并入求和的那一遍"}},
      {"rule5.online_softmax",
       {"规则 5：在线 softmax（max 与 exp 之和在同一遍完成，max 增大时对累加和重新缩放）在 tile "
        "覆盖整行时比单独一遍 max "
        "更贵，行被切分后才有收益",
        "在线统计为求和计算一次 exp(x - max)，应用阶段为 y 再算一次（对 tile 多一次 Sub 和 "
        "Exp），且每次部分结果合并都要对累加和重新缩放"
        "（算子表中 sumexp 的记录）；单独求 max 的写法把 e = exp(x - max) 留在 UB "
        "中再求和。行被切分后，单独的 max 是经 GM "
        "对 x 的一遍读取，在线统计省掉了它"}},
      {"rule5.softmax_fusion",
       {"规则 5：tile 覆盖整行时，融合成一个 kernel 的 softmax 优于三个 kernel（amax；sub、exp 与 "
        "sum；div），省下中间结果经 GM 的往返",
        "三个 kernel 要写出 m、e、s，读两遍 x、再读一遍 e，且每个 kernel 的任务要等上一个 kernel "
        "结束；融合且 tile 覆盖整行时，所有中间结果留在 UB。行被切分后，融合程序同样变成经 GM "
        "的三个阶段且共用一个 tile，而三个 kernel 各自取最优 tile"}},
      {"rule5.layernorm_one_pass",
       {"规则 5：tile 覆盖整行时，LayerNorm 的一遍统计（E[x^2] - "
        "E[x]^2）与两遍统计（先求均值，再求 (x - "
        "均值)^2 的均值）持平；行被切分后一遍统计胜出",
        "行被切分时均值的阶段在此结束：两遍写法为均值读一次 "
        "x，为平方偏差再读一次，归一化再读一次；一遍写法的两个均值共用一遍（X9）。"
        "代价在数值上：均值远大于离散度时 E[x^2] - E[x]^2 会相消（Welford "
        "更新可避免，每个元素多一次除法）"}},
      {"rule5.fusion_ub",
       {"规则 5：把残差加法融合进 RMSNorm，在融合阶段的 tile 能把整行放进 UB "
        "时有收益；行被切分后不再有收益",
        "融合且 tile 覆盖整行时，h 不离开 UB，一个 kernel "
        "的任务完成两件事；行被切分时均值的阶段在此结束，h "
        "要写出供归一化阶段读回，和分开的 kernel 一样，而且该 tile 要同时容纳 x、res、h 和平方"}},
      {"rule5.fp32_accumulate",
       {"规则 5：FP16 输入以 FP32 "
        "累加要付出类型转换的代价：搬运为瓶颈时很小，向量流水成为瓶颈时变大",
        "转换是对 tile 多一遍全速向量操作，FP32 运算每次 repeat "
        "只处理一半元素；固定开销和搬运占主导时（短行）"
        "它被掩盖，长行时向量流水成为瓶颈"}},
  };
  return t;
}

}  // namespace

void check_rules_lang(const std::string& lang) {
  if (lang != "en" && lang != "zh")
    throw Error("rules: --lang " + lang + ": unknown language (en, zh)");
}

void localize_rules(std::vector<RulesResult>& results, const std::string& lang) {
  check_rules_lang(lang);
  if (lang == "en") return;
  for (auto& r : results)
    for (auto& k : r.checks) {
      const auto it = zh_claims().find(k.id);
      if (it == zh_claims().end()) continue;
      k.claim = it->second.claim;
      if (it->second.why) k.why = it->second.why;
    }
}

}  // namespace tilesim
