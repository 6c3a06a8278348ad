// BERT's starting weights from the files the field has them in: the MLPerf
// reference's TensorFlow checkpoint (model.ckpt-28252, the names of
// google-research/bert's modeling.py) and Hugging Face's BertForPreTraining
// safetensors. Our fused attention.qkv is their query, key and value stacked
// along the output dimension; TensorFlow's dense kernels are [in, out] and are
// transposed into our [out, in]. Only the trainable weights are read:
// optimizer slots (.../adam_m, .../adam_v, ...), global_step and any other
// tensor are ignored. Every load reads into a host copy first, so a missing
// or misshaped tensor is a one-line error naming it and leaves the model as
// it was.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "reference/models/bert.h"

namespace mlperf::models {

// `prefix` is the checkpoint path without ".index" (".../model.ckpt-28252").
// float16 and bfloat16 tensors are widened to fp32.
absl::Status LoadBertTfCheckpoint(Bert& model, const std::string& prefix);

// The model's weights under the reference's TensorFlow names and layouts, as
// one shard that LoadBertTfCheckpoint and TensorFlow read back bit for bit.
absl::Status WriteBertTfCheckpoint(const Bert& model, const std::string& prefix);

// A safetensors file with transformers' BertForPreTraining names
// (bert.encoder.layer.N.attention.self.query.weight, ...). The tied
// cls.predictions.decoder.weight may be absent; where present it must equal
// the word embeddings, which this model shares with the decoder.
absl::Status LoadBertHfSafetensors(Bert& model, const std::string& path);

}  // namespace mlperf::models
