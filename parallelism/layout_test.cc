#include "parallelism/layout.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "parallelism/program_builder.h"

namespace clustersim {
namespace layout_test {

// A dense model context with everything divisible unless a test changes it.
LayoutContext context(int layers, int gpus, int64_t global_batch = 64, int64_t micro_batch = 1) {
  return LayoutContext{.layers = layers, .heads = 64, .kv_heads = 64, .ffn_hidden = 16384, .gpus = gpus,
                       .gpus_per_node = 8, .global_batch = global_batch, .micro_batch = micro_batch,
                       .seq_len = 2048};
}

std::string rejection(const Layout& l, const LayoutContext& c) {
  try {
    validate_layout(l, c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Layout, L1LayersVersusPipeline) {
  // (a) 30 layers on 4 stages: rejected (older Megatron silently built 28 layers).
  const std::string a = rejection(Layout{.pp = 4}, context(30, 4));
  EXPECT_NE(a.find("pp = 4"), std::string::npos) << a;
  EXPECT_NE(a.find("30 layers"), std::string::npos) << a;
  EXPECT_NE(a.find("stage_layers"), std::string::npos) << a;
  // (b) 80 layers, pp 16, vpp 2: 5 layers per stage cannot be split into 2 chunks.
  const std::string b = rejection(
      Layout{.pp = 16, .vpp = 2, .schedule = PipelineSchedule::kInterleaved1F1B}, context(80, 16, 64));
  EXPECT_NE(b.find("vpp = 2"), std::string::npos) << b;
  // (c) 40 layers, pp 8, 2 layers per virtual stage: 5 per stage is not a multiple of 2.
  const std::string c = rejection(
      Layout{.pp = 8, .layers_per_virtual_stage = 2, .schedule = PipelineSchedule::kInterleaved1F1B},
      context(40, 8, 64));
  EXPECT_NE(c.find("layers_per_virtual_stage = 2"), std::string::npos) << c;
  // (d) 40 layers, pp 2: vpp 12 rejected, vpp 10 accepted (20 layers per stage → 2 per chunk).
  Layout d{.pp = 2, .vpp = 12, .schedule = PipelineSchedule::kInterleaved1F1B};
  EXPECT_NE(rejection(d, context(40, 2, 64)).find("vpp = 12"), std::string::npos);
  d.vpp = 10;
  EXPECT_NO_THROW(validate_layout(d, context(40, 2, 64)));
  EXPECT_EQ(virtual_stages(d, 40), 10);
  // (e) 60 layers, pp 8: rejected evenly; the explicit list [4, 8 × 7] with vpp 4 is accepted.
  EXPECT_NE(rejection(Layout{.pp = 8}, context(60, 8)).find("60 layers"), std::string::npos);
  Layout e{.pp = 8, .vpp = 4, .stage_layers = {4, 8, 8, 8, 8, 8, 8, 8},
           .schedule = PipelineSchedule::kInterleaved1F1B};
  EXPECT_NO_THROW(validate_layout(e, context(60, 8, 64)));
  EXPECT_EQ(layers_per_stage(e, 60), e.stage_layers);
  // A list that does not sum to the model's layers is rejected.
  e.stage_layers = {4, 8, 8, 8, 8, 8, 8, 7};
  EXPECT_NE(rejection(e, context(60, 8, 64)).find("sums to 59"), std::string::npos);
}

TEST(Layout, L2L3HeadsKvHeadsAndExperts) {
  LayoutContext c = context(32, 8);
  c.heads = 32;
  c.kv_heads = 4;  // kv 4, tp 8: each KV head replicated twice — accepted
  EXPECT_NO_THROW(validate_layout(Layout{.tp = 8}, c));
  c.kv_heads = 2;
  EXPECT_NO_THROW(validate_layout(Layout{.tp = 8}, c));
  c.kv_heads = 3;  // 8 % 3 != 0 and 3 % 8 != 0
  c.heads = 24;
  const std::string kv = rejection(Layout{.tp = 8}, c);
  EXPECT_NE(kv.find("3 KV heads"), std::string::npos) << kv;
  // 64 heads with tp 3: rejected, valid tp listed.
  LayoutContext h = context(32, 3);
  const std::string heads = rejection(Layout{.tp = 3}, h);
  EXPECT_NE(heads.find("64 attention heads"), std::string::npos) << heads;
  EXPECT_NE(heads.find("1, 2, 4, 8, 16, 32, 64"), std::string::npos) << heads;
  // 256 experts with ep 3: rejected.
  LayoutContext moe = context(32, 3, 63);
  moe.experts = 256;
  const std::string ep = rejection(Layout{.dp = 3, .ep = 3}, moe);
  EXPECT_NE(ep.find("256 experts"), std::string::npos) << ep;
}

TEST(Layout, L4BatchAndWorldSize) {
  // (a) dp 7, global batch 256, micro batch 2: suggest 252 or 266 (multiples of 14).
  LayoutContext a = context(32, 7, 256, 2);
  a.heads = 32;
  const std::string msg = rejection(Layout{.dp = 7}, a);
  EXPECT_NE(msg.find("252 or 266"), std::string::npos) << msg;
  // (b) 1,472 GPUs, tp 8, pp 8 → dp 23; global batch 32 is not a multiple of 23.
  LayoutContext b = context(64, 1472, 32, 1);
  EXPECT_NE(rejection(Layout{.tp = 8, .pp = 8, .dp = 23}, b).find("global_batch = 32"), std::string::npos);
  // (c) 280 GPUs, tp 8, pp 35, global batch 280, micro batch 1: Turing-NLG 530B (105 layers, 128 heads).
  LayoutContext c = context(105, 280, 280, 1);
  c.heads = 128;
  c.kv_heads = 128;
  c.ffn_hidden = 4 * 20480;
  Layout tnlg{.tp = 8, .pp = 35, .dp = 1};
  EXPECT_NO_THROW(validate_layout(tnlg, c));
  EXPECT_EQ(microbatches(tnlg, 280, 1), 280);
  // World size must match the GPUs unless idle GPUs are allowed.
  EXPECT_NE(rejection(Layout{.tp = 8, .dp = 2}, context(32, 8)).find("16 but the cluster has 8"), std::string::npos);
  // The key blamed first: dp where tp·cp·pp divides the GPUs, else the size that does not.
  auto blamed = [](const Layout& l, const LayoutContext& given) {
    try {
      validate_layout(l, given);
    } catch (const InputError& e) {
      return e.keys().empty() ? std::string() : e.keys().front();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(blamed(Layout{.tp = 2, .dp = 3}, context(32, 8)), "parallelism.dp");
  LayoutContext threes = context(33, 8);  // 48 heads and 33 layers split by 3
  threes.heads = 48;
  threes.kv_heads = 48;
  EXPECT_EQ(blamed(Layout{.tp = 3, .dp = 4}, threes), "parallelism.tp");
  EXPECT_EQ(blamed(Layout{.tp = 2, .pp = 3, .dp = 1}, threes), "parallelism.pp");
  EXPECT_EQ(blamed(Layout{.tp = 2, .pp = 16, .dp = 1}, context(32, 8)), "parallelism.pp");  // 32 > 8 GPUs
  // Sizes whose product leaves int64 (2^64 wrapped to 0, which idle GPUs accepted) are beyond any cluster.
  LayoutContext idle = context(32, 8);
  idle.allow_idle_gpus = true;
  const int big = 1 << 16;
  const std::string huge = rejection(Layout{.tp = big, .pp = big, .dp = big, .cp = big}, idle);
  EXPECT_NE(huge.find("tp·cp·pp·dp = 65536·65536·65536·65536 = more than 2^31 but the cluster has 8 GPUs"),
            std::string::npos)
      << huge;
  EXPECT_EQ(size_product({big, big}), std::nullopt);
  EXPECT_EQ(size_product({8, 4, 2}), 64);
}

TEST(Layout, ScheduleAndOtherRules) {
  // Interleaved needs microbatches % pp == 0.
  const std::string m = rejection(Layout{.pp = 4, .vpp = 2, .schedule = PipelineSchedule::kInterleaved1F1B},
                                  context(32, 4, 6));
  EXPECT_NE(m.find("multiple of pp = 4"), std::string::npos) << m;
  // vpp without the interleaved schedule is rejected; 1F1B with m < p is accepted (extra bubble simulated).
  EXPECT_NE(rejection(Layout{.pp = 4, .vpp = 2}, context(32, 4)).find("interleaved-1f1b"), std::string::npos);
  EXPECT_NO_THROW(validate_layout(Layout{.pp = 4}, context(32, 4, 2)));
  EXPECT_NE(rejection(Layout{.sequence_parallel = true}, context(32, 1)).find("tp > 1"), std::string::npos);
  EXPECT_NE(rejection(Layout{.zero_stage = 4}, context(32, 1)).find("0, 1, 2, 3"), std::string::npos);
  EXPECT_NE(rejection(Layout{.order = "tp-dp"}, context(32, 1)).find("order"), std::string::npos);
  // An order of many kilobytes (an unclosed quote swallowed the rest of a file, found by fuzzing) is
  // quoted cut to excerpt()'s 60 bytes.
  const std::string long_order = rejection(Layout{.order = "tp-cp-dp-pp-" + std::string(3000, 'x')}, context(32, 1));
  EXPECT_NE(long_order.find("parallelism.order = \"tp-cp-dp-pp-xxx"), std::string::npos) << long_order;
  EXPECT_LT(long_order.size(), 300U) << long_order;
  // Megatron refuses --overlap-param-gather without the distributed optimizer; any ZeRO stage has a gather.
  EXPECT_NE(rejection(Layout{.overlap_param_gather = true}, context(32, 1)).find("overlap_param_gather"),
            std::string::npos);
  for (int zero = 1; zero <= 3; ++zero) {
    EXPECT_NO_THROW(validate_layout(Layout{.zero_stage = zero, .overlap_param_gather = true}, context(32, 1)));
  }
  LayoutContext cp = context(32, 2);
  cp.seq_len = 4094;
  EXPECT_NE(rejection(Layout{.cp = 2}, cp).find("multiple of 2·cp = 4"), std::string::npos);
}

TEST(Layout, GradientBucketsFollowTheFrameworksDefault) {
  EXPECT_EQ(parse_grad_bucket_elements("auto"), 0);
  EXPECT_EQ(parse_grad_bucket_elements("6553600"), 6'553'600);
  EXPECT_EQ(parse_grad_bucket_elements("4e7"), 40'000'000);  // as help-config and the README write counts
  for (const char* bad : {"0", "-1", "1.5e0", "40M", "", "auto ", "99999999999999999999"}) {
    EXPECT_THROW(parse_grad_bucket_elements(bad), InputError) << bad;
  }
  TrainingSpec megatron;
  // Megatron-Core: max(40M, 1M x dp) parameters.
  EXPECT_EQ(gradient_bucket_elements(Layout{.dp = 8}, megatron), 40'000'000);
  EXPECT_EQ(gradient_bucket_elements(Layout{.dp = 40}, megatron), 40'000'000);
  EXPECT_EQ(gradient_bucket_elements(Layout{.dp = 128}, megatron), 128'000'000);
  // PyTorch DDP: 25 MiB of gradients (fp32 gradients: 6,553,600 elements).
  TrainingSpec eager;
  eager.framework = Framework::kPytorchEager;
  eager.precision = PrecisionPolicy::pure_fp32();
  EXPECT_EQ(gradient_bucket_elements(Layout{.dp = 8}, eager), (int64_t{25} << 20) / eager.precision.grad_bytes());
  // A size given wins.
  EXPECT_EQ(gradient_bucket_elements(Layout{.dp = 128, .grad_bucket_elements = 1000}, megatron), 1000);
}

}  // namespace layout_test
}  // namespace clustersim
