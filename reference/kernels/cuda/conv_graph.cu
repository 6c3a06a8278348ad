#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/conv.h"
#include "reference/kernels/cuda/conv_graph.h"
#include "reference/kernels/cuda/conv_graph_ops.h"
#include "reference/kernels/switches.h"

namespace mlperf::cuda {
namespace {

using namespace graph_ops;  // NOLINT: the descriptors of this file's graphs

// Everything a built plan refers to, kept alive with it. With timing on,
// `candidates` holds the acceptable plans (workspace bytes each) until the
// first call times them and keeps the fastest in `plan`.
struct GraphPlan {
  std::vector<std::unique_ptr<Desc>> parts;
  Desc* plan = nullptr;
  int64_t workspace = 0;
  std::vector<std::pair<Desc*, int64_t>> candidates;
};

// How many of the heuristics' acceptable engines a timed search tries.
constexpr size_t kTimedCandidates = 8;
// It skips those asking for more scratch than this (beyond the first
// choice's): a scratch allocation that fails would end the run.
constexpr int64_t kTimedWorkspaceLimit = int64_t{1} << 30;

// The device pointers of one execution with their tensors' ids.
struct Operands {
  int64_t uids[8];
  void* data[8];
  int64_t count = 0;
  void Add(int64_t uid, const void* p) {
    uids[count] = uid;
    data[count++] = const_cast<void*>(p);
  }
};

Operands OperandsOf(const ConvGraphCall& c, void* x, void* w, void* y, const ConvGraphExtras& e) {
  Operands o;
  o.Add(kUidX, x);
  o.Add(kUidW, w);
  o.Add(kUidY, y);
  if (c.scale_bias) {
    o.Add(kUidScale, e.scale);
    o.Add(kUidBias, e.bias);
    if (c.residual) o.Add(kUidResidual, e.residual);
  }
  return o;
}

// The engine's numerical notes allow it: fp32 takes no tensor-core or
// down-converting engine (that would be TF32); `deterministic` excludes the
// non-deterministic ones.
bool Acceptable(const Desc& config, bool fp32, bool deterministic) {
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t n = 0;
  if (!engine ||
      cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e) != CUDNN_STATUS_SUCCESS)
    return false;
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t count = 0;
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count,
                               notes) != CUDNN_STATUS_SUCCESS)
    return false;
  for (int64_t i = 0; i < count; ++i) {
    if (fp32 && (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE ||
                 notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
                 notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION))
      return false;
    if (deterministic && notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) return false;
  }
  return true;
}

// The operations of one call (the convolution, then with scale_bias the
// epilogue that replaces its output), with the descriptors they refer to
// appended to `parts` and the operations to `ops`; false when cuDNN refuses
// them. alignment: of x, w, y and the residual.
bool DescribeOperations(const ConvGraphCall& c, const int64_t alignment[4],
                        std::vector<std::unique_ptr<Desc>>& parts,
                        std::vector<cudnnBackendDescriptor_t>& ops) {
  if (c.scale_bias && c.direction != ConvGraphCall::kForward) return false;
  const int nb = c.nb_dims, spatial = nb - 2;
  auto x = TensorDesc(kUidX, c.dtype, nb, c.x_dims, c.x_strides, alignment[0]);
  auto w = TensorDesc(kUidW, c.dtype, nb, c.w_dims, c.w_strides, alignment[1]);
  auto y = TensorDesc(kUidY, c.dtype, nb, c.y_dims, c.y_strides, alignment[2]);
  // With an epilogue the convolution writes fp32 inside the kernel only.
  std::unique_ptr<Desc> epilogue_y;
  if (c.scale_bias) {
    epilogue_y = std::move(y);
    y = TensorDesc(kUidVirtual, CUDNN_DATA_FLOAT, nb, c.y_dims, c.y_strides, 16,
                   /*is_virtual=*/true);
  }
  if (!x || !w || !y) return false;

  auto conv = std::make_unique<Desc>(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t dilation[3] = {1, 1, 1};
  const int64_t sd = spatial;
  // The geometry's spatial arrays hold (D, H, W); a 2-D call uses H and W.
  const int first = 3 - spatial;
  if (!(conv->Set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &sd) &&
        conv->Set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute) &&
        conv->Set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode) &&
        conv->Set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial,
                  c.pre_pad + first) &&
        conv->Set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial,
                  c.post_pad + first) &&
        conv->Set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial, dilation) &&
        conv->Set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial,
                  c.stride + first) &&
        conv->Finalize()))
    return false;
  // Each direction names its operands and its alpha/beta attributes.
  struct Names {
    cudnnBackendDescriptorType_t op;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  };
  static constexpr Names kNames[3] = {
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA}};
  const Names& names = kNames[c.direction];
  auto op = std::make_unique<Desc>(names.op);
  const float alpha = 1.0f, beta = 0.0f;
  if (!(op->SetDesc(names.x, *x) && op->SetDesc(names.w, *w) && op->SetDesc(names.y, *y) &&
        op->SetDesc(names.conv, *conv) && op->Set(names.alpha, CUDNN_TYPE_FLOAT, 1, &alpha) &&
        op->Set(names.beta, CUDNN_TYPE_FLOAT, 1, &beta) && op->Finalize()))
    return false;
  ops.push_back(op->get());
  const Desc& y_desc = *y;
  for (auto* part : {&x, &w, &y, &conv, &op}) parts.push_back(std::move(*part));
  if (c.scale_bias)
    return DescribeScaleBiasAct(c, y_desc, std::move(epilogue_y), alignment[3], parts, ops);
  return true;
}

// The engine configurations cuDNN's heuristics in `mode` rank for `graph`,
// best first; empty when it has none.
std::vector<std::unique_ptr<Desc>> RankedConfigs(const Desc& graph, cudnnBackendHeurMode_t mode) {
  std::vector<std::unique_ptr<Desc>> configs;
  Desc heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  int64_t count = 0;
  if (!(heuristics.SetDesc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph) &&
        heuristics.Set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode) &&
        heuristics.Finalize()) ||
      cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0)
    return configs;
  std::vector<cudnnBackendDescriptor_t> handles;
  for (int64_t i = 0; i < count; ++i) {
    configs.push_back(std::make_unique<Desc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    if (!*configs.back()) return {};
    handles.push_back(configs.back()->get());
  }
  int64_t returned = 0;
  if (cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned,
                               handles.data()) != CUDNN_STATUS_SUCCESS)
    return {};
  configs.resize(static_cast<size_t>(std::min(returned, count)));
  return configs;
}

// The operation graph of one call and the first engine cuDNN's heuristics
// rank for it that is acceptable and builds, or with `timed` the first
// kTimedCandidates of them as candidates; null when none. A fused call (an
// epilogue), where mode A has none, asks the fallback mode: the fused
// engines are compiled at run time, and mode A may not list them.
std::unique_ptr<GraphPlan> Build(const ConvGraphCall& c, const int64_t alignment[4], bool timed) {
  auto out = std::make_unique<GraphPlan>();
  std::vector<cudnnBackendDescriptor_t> ops;
  if (!DescribeOperations(c, alignment, out->parts, ops)) return nullptr;

  cudnnHandle_t handle = Cudnn();
  auto graph = std::make_unique<Desc>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  if (!(graph->Set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                   static_cast<int64_t>(ops.size()), ops.data()) &&
        graph->Set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle) &&
        graph->Finalize()))
    return nullptr;

  const bool fp32 = c.dtype == CUDNN_DATA_FLOAT;
  std::vector<cudnnBackendHeurMode_t> modes = {CUDNN_HEUR_MODE_A};
  if (c.scale_bias) modes.push_back(CUDNN_HEUR_MODE_FALLBACK);
  for (const cudnnBackendHeurMode_t mode : modes) {
    std::vector<std::unique_ptr<Desc>> configs = RankedConfigs(*graph, mode);
    for (const bool deterministic : {true, false}) {
      for (auto& config : configs) {
        if (!config || !Acceptable(*config, fp32, deterministic)) continue;
        auto plan = std::make_unique<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        int64_t workspace = 0;
        if (!(plan->Set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle) &&
              plan->SetDesc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *config) && plan->Finalize()))
          continue;
        int64_t n = 0;
        if (cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &n, &workspace) != CUDNN_STATUS_SUCCESS)
          continue;
        if (out->plan == nullptr) {
          out->workspace = workspace;
          out->plan = plan.get();
        }
        if (timed && (out->candidates.empty() ||
                      workspace <= std::max(kTimedWorkspaceLimit, out->workspace)))
          out->candidates.emplace_back(plan.get(), workspace);
        out->parts.push_back(std::move(config));
        out->parts.push_back(std::move(plan));
        if (!timed || out->candidates.size() == kTimedCandidates) break;
      }
      // Non-deterministic engines only where no deterministic one builds.
      if (out->plan != nullptr) {
        out->parts.push_back(std::move(graph));
        return out;
      }
    }
  }
  return nullptr;
}

// Queues plan on the operands with `workspace` bytes of scratch.
cudnnStatus_t Execute(const Desc& plan, int64_t workspace, const Operands& operands) {
  void* scratch =
      workspace > 0 ? Scratch(static_cast<size_t>(workspace), kScratchWorkspace) : nullptr;
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  MLPERF_CHECK_MSG(
      pack.Set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, operands.count,
               operands.data) &&
          pack.Set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, operands.count,
                   operands.uids) &&
          pack.Set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &scratch) &&
          pack.Finalize(),
      "cuDNN graph API: the variant pack of a convolution could not be built");
  return cudnnBackendExecute(Cudnn(), plan.get(), pack.get());
}

// The fastest of three runs after an untimed one, in ms (infinite when the
// plan fails to run). The outputs are overwritten (beta is 0; the sums are
// zeroed before the call's own run), so running on the call's own tensors is
// harmless.
float TimePlan(const Desc& plan, int64_t workspace, const Operands& operands) {
  constexpr float kFailed = std::numeric_limits<float>::infinity();
  if (Execute(plan, workspace, operands) != CUDNN_STATUS_SUCCESS) return kFailed;
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  float best = kFailed;
  for (int run = 0; run < 3; ++run) {
    CUDA_CHECK(cudaEventRecord(start, Stream()));
    const cudnnStatus_t status = Execute(plan, workspace, operands);
    CUDA_CHECK(cudaEventRecord(stop, Stream()));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (status == CUDNN_STATUS_SUCCESS && ms < best) best = ms;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

// Times the candidates on the call's tensors and keeps the fastest; while
// the stream is being captured (nothing can be timed) the heuristics' first.
void PickTimed(GraphPlan* p, const Operands& operands) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(Stream(), &capture));
  if (capture == cudaStreamCaptureStatusNone && p->candidates.size() > 1) {
    std::vector<float> ms;
    for (const auto& [plan, workspace] : p->candidates)
      ms.push_back(TimePlan(*plan, workspace, operands));
    size_t best = 0;
    for (size_t i = 1; i < ms.size(); ++i)
      if (ms[i] < ms[best]) best = i;
    if (ms[best] < std::numeric_limits<float>::infinity()) {
      p->plan = p->candidates[best].first;
      p->workspace = p->candidates[best].second;
    }
    if (ops::Switches().cudnn_log)
      std::fprintf(stderr,
                   "cuDNN graph API: timed %zu engines, kept the heuristics' #%zu (%.3f ms; "
                   "their first: %.3f ms)\n",
                   ms.size(), best + 1, ms[best], ms[0]);
  }
  p->candidates.clear();
}

// The largest of 16, 8, 4, 2 bytes that the address is a multiple of.
int64_t Alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  for (int64_t b = 16; b > 1; b /= 2)
    if (a % b == 0) return b;
  return 1;
}

thread_local int64_t g_runs = 0, g_epilogue_runs = 0;

bool g_graph_api = ops::Switches().cudnn_graph;
bool g_epilogues = ops::Switches().cudnn_epilogue;

}  // namespace

int ActivationDims(bool three_d, bool channels_last, int64_t n, int64_t c, const int64_t spatial[3],
                   int64_t dims[5], int64_t strides[5]) {
  const int nb = three_d ? 5 : 4;
  dims[0] = n;
  dims[1] = c;
  for (int i = 2; i < nb; ++i) dims[i] = spatial[3 - nb + i];
  if (channels_last) {
    strides[1] = 1;
    strides[nb - 1] = dims[1];
    for (int i = nb - 2; i >= 2; --i) strides[i] = strides[i + 1] * dims[i + 1];
    strides[0] = strides[2] * dims[2];
  } else {
    strides[nb - 1] = 1;
    for (int i = nb - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  }
  return nb;
}

ConvGraphCall DescribeConvGraph(ConvGraphCall::Direction direction, const ConvGeometry& g,
                                cudnnDataType_t dtype, bool three_d, bool x_channels_last,
                                bool w_channels_last) {
  ConvGraphCall c{};
  c.direction = direction;
  c.dtype = dtype;
  const int64_t out[3] = {g.out(0), g.out(1), g.out(2)};
  c.nb_dims =
      ActivationDims(three_d, x_channels_last, g.batch, g.in_channels, g.in, c.x_dims, c.x_strides);
  ActivationDims(three_d, x_channels_last, g.batch, g.out_channels, out, c.y_dims, c.y_strides);
  ActivationDims(three_d, w_channels_last, g.out_channels, g.in_channels, g.kernel, c.w_dims,
                 c.w_strides);
  for (int i = 0; i < 3; ++i) {
    c.pre_pad[i] = g.pad_begin[i];
    c.post_pad[i] = g.pad_end[i];
    c.stride[i] = g.stride[i];
  }
  return c;
}

void SetConvGraphApi(bool on) { g_graph_api = on; }
bool ConvGraphApi() { return g_graph_api; }
int64_t ConvGraphRuns() { return g_runs; }
void SetConvEpilogues(bool on) { g_epilogues = on; }
bool ConvEpilogues() { return g_epilogues; }
int64_t ConvEpilogueRuns() { return g_epilogue_runs; }

bool ConvGraphDescribable(const ConvGraphCall& call) {
  const int64_t alignment[4] = {16, 16, 16, 16};
  std::vector<std::unique_ptr<Desc>> parts;
  std::vector<cudnnBackendDescriptor_t> ops;
  return DescribeOperations(call, alignment, parts, ops);
}

bool RunConvGraph(const ConvGraphCall& c, void* x, void* w, void* y, const ConvGraphExtras& e) {
  MLPERF_CHECK_MSG(!c.scale_bias || (e.scale != nullptr && e.bias != nullptr &&
                                     (!c.residual || e.residual != nullptr)),
                   "cuDNN graph API: a call with an epilogue needs its operands");
  // The per-channel tensors are described 16-byte aligned.
  if (c.scale_bias && (Alignment(e.scale) < 16 || Alignment(e.bias) < 16)) return false;
  const int64_t alignment[4] = {Alignment(x), Alignment(w), Alignment(y),
                                c.residual ? Alignment(e.residual) : 16};
  std::vector<int64_t> key = {c.direction,  c.dtype,      c.nb_dims,    alignment[0], alignment[1],
                              alignment[2], alignment[3], c.scale_bias, c.residual,   c.relu};
  for (int i = 0; i < c.nb_dims; ++i)
    key.insert(key.end(), {c.x_dims[i], c.x_strides[i], c.w_dims[i], c.w_strides[i], c.y_dims[i],
                           c.y_strides[i]});
  for (int i = 0; i < 3; ++i) key.insert(key.end(), {c.pre_pad[i], c.post_pad[i], c.stride[i]});
  key.push_back(static_cast<int64_t>(GetConvAlgoSearch()));  // a benchmark may time both ways
  // The context first, so that it outlives the plans at thread exit (thread
  // locals are destroyed in reverse order of construction).
  Cudnn();
  thread_local std::map<std::vector<int64_t>, std::unique_ptr<GraphPlan>> plans;
  auto it = plans.find(key);
  if (it == plans.end()) {
    it = plans.emplace(key, Build(c, alignment, GetConvAlgoSearch() == ConvAlgoSearch::kExhaustive))
             .first;
    // A fusion that cuDNN does not offer says so, once per shape.
    if (it->second == nullptr && c.scale_bias)
      std::fprintf(stderr,
                   "cuDNN graph API: no engine for the fused epilogue of a %lldx%lld-channel "
                   "convolution; it runs unfused\n",
                   static_cast<long long>(c.x_dims[1]), static_cast<long long>(c.y_dims[1]));
  }
  GraphPlan* plan = it->second.get();
  if (plan == nullptr) return false;
  const Operands operands = OperandsOf(c, x, w, y, e);
  if (!plan->candidates.empty()) PickTimed(plan, operands);
  const cudnnStatus_t status = Execute(*plan->plan, plan->workspace, operands);
  if (c.scale_bias && status != CUDNN_STATUS_SUCCESS) {
    // A fused engine that builds but does not run: the caller runs the
    // plain ops (which rewrite y) from now on.
    std::fprintf(stderr,
                 "cuDNN graph API: the fused epilogue failed to run (%s); the convolution "
                 "runs without it\n",
                 cudnnGetErrorString(status));
    it->second.reset();
    return false;
  }
  CUDNN_CHECK(status);
  ++g_runs;
  if (c.scale_bias) ++g_epilogue_runs;
  return true;
}

}  // namespace mlperf::cuda
