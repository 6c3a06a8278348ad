// Names used in MLLOG lines: every log key that a training ruleset from
// 1.0.0 to 6.1.0 checks or the official emitter defines, plus metadata keys and
// the fixed values the rules compare against.
#pragma once

#include <string_view>

namespace mlperf::mllog {

enum class EventType { kIntervalStart, kIntervalEnd, kPointInTime };

namespace key {

// Submission information, logged before init_start.
inline constexpr std::string_view kSubmissionBenchmark = "submission_benchmark";
inline constexpr std::string_view kSubmissionDivision = "submission_division";
inline constexpr std::string_view kSubmissionEntry = "submission_entry";
inline constexpr std::string_view kSubmissionOrg = "submission_org";
inline constexpr std::string_view kSubmissionPlatform = "submission_platform";
inline constexpr std::string_view kSubmissionPocEmail = "submission_poc_email";
inline constexpr std::string_view kSubmissionPocName = "submission_poc_name";
inline constexpr std::string_view kSubmissionStatus = "submission_status";

// Interval boundaries. run_start..run_stop is the timed region.
inline constexpr std::string_view kBlockStart = "block_start";
inline constexpr std::string_view kBlockStop = "block_stop";
inline constexpr std::string_view kEpochStart = "epoch_start";
inline constexpr std::string_view kEpochStop = "epoch_stop";
inline constexpr std::string_view kEvalStart = "eval_start";
inline constexpr std::string_view kEvalStop = "eval_stop";
inline constexpr std::string_view kInitStart = "init_start";
inline constexpr std::string_view kInitStop = "init_stop";
inline constexpr std::string_view kRunStart = "run_start";
inline constexpr std::string_view kRunStop = "run_stop";
inline constexpr std::string_view kStagingStart = "staging_start";
inline constexpr std::string_view kStagingStop = "staging_stop";

// Run information and results.
inline constexpr std::string_view kAggregatedEvalAccuracy = "aggregated_eval_accuracy";
inline constexpr std::string_view kAveragedValidationLoss = "averaged_validation_loss";
inline constexpr std::string_view kCacheClear = "cache_clear";
inline constexpr std::string_view kConfigFilename = "config_filename";
inline constexpr std::string_view kEvalAccuracy = "eval_accuracy";
inline constexpr std::string_view kEvalSamples = "eval_samples";
inline constexpr std::string_view kEvaluationFrequency = "evaluation_frequency";
inline constexpr std::string_view kSeed = "seed";
inline constexpr std::string_view kTrainSamples = "train_samples";
inline constexpr std::string_view kTrainedSamples = "trained_samples";
inline constexpr std::string_view kWeightsInitialization = "weights_initialization";

// Hyperparameters. Some keys are required only by the compliance rules, not
// by the official emitter's constants (sgd_opt_*, oversampling, lora_rank, ...).
inline constexpr std::string_view kActualSelfplayGamesPerGeneration =
    "actual_selfplay_games_per_generation";
inline constexpr std::string_view kDataNumBuckets = "data_num_buckets";
inline constexpr std::string_view kDataSpecAugmentFreqMax = "data_spec_augment_freq_max";
inline constexpr std::string_view kDataSpecAugmentFreqMin = "data_spec_augment_freq_min";
inline constexpr std::string_view kDataSpecAugmentFreqN = "data_spec_augment_freq_n";
inline constexpr std::string_view kDataSpecAugmentTimeMax = "data_spec_augment_time_max";
inline constexpr std::string_view kDataSpecAugmentTimeMin = "data_spec_augment_time_min";
inline constexpr std::string_view kDataSpecAugmentTimeN = "data_spec_augment_time_n";
inline constexpr std::string_view kDataSpeedPerturbatonMax = "data_speed_perturbaton_max";
inline constexpr std::string_view kDataSpeedPerturbatonMin = "data_speed_perturbaton_min";
inline constexpr std::string_view kDataTrainMaxDuration = "data_train_max_duration";
inline constexpr std::string_view kDataTrainNumBuckets = "data_train_num_buckets";
inline constexpr std::string_view kEvalMaxPredictionSymbols = "eval_max_prediction_symbols";
inline constexpr std::string_view kGenerationTrainingRolloutTemperature =
    "generation_training_rollout_temperature";
inline constexpr std::string_view kGenerationTrainingRolloutTopP =
    "generation_training_rollout_top_p";
inline constexpr std::string_view kGenerationValidationRolloutTemperature =
    "generation_validation_rollout_temperature";
inline constexpr std::string_view kGenerationValidationRolloutTopP =
    "generation_validation_rollout_top_p";
inline constexpr std::string_view kGlobalBatchSize = "global_batch_size";
inline constexpr std::string_view kGradientAccumulationSteps = "gradient_accumulation_steps";
inline constexpr std::string_view kInitCheckpointStep = "init_checkpoint_step";
inline constexpr std::string_view kLarsEpsilon = "lars_epsilon";
inline constexpr std::string_view kLarsOptBaseLearningRate = "lars_opt_base_learning_rate";
inline constexpr std::string_view kLarsOptEndLearningRate = "lars_opt_end_learning_rate";
inline constexpr std::string_view kLarsOptLearningRateDecayPolyPower =
    "lars_opt_learning_rate_decay_poly_power";
inline constexpr std::string_view kLarsOptLearningRateDecaySteps =
    "lars_opt_learning_rate_decay_steps";
inline constexpr std::string_view kLarsOptLearningRateWarmupEpochs =
    "lars_opt_learning_rate_warmup_epochs";
inline constexpr std::string_view kLarsOptMomentum = "lars_opt_momentum";
inline constexpr std::string_view kLarsOptWeightDecay = "lars_opt_weight_decay";
inline constexpr std::string_view kLoraAlpha = "lora_alpha";
inline constexpr std::string_view kLoraRank = "lora_rank";
inline constexpr std::string_view kLrBoundaries = "lr_boundaries";
inline constexpr std::string_view kLrDecayStartSteps = "lr_decay_start_steps";
inline constexpr std::string_view kLrRates = "lr_rates";
inline constexpr std::string_view kMaxImageSize = "max_image_size";
inline constexpr std::string_view kMaxSamples = "max_samples";
inline constexpr std::string_view kMaxSequenceLength = "max_sequence_length";
inline constexpr std::string_view kMaxSteps = "max_steps";
inline constexpr std::string_view kMinImageSize = "min_image_size";
inline constexpr std::string_view kMinSelfplayGamesPerGeneration =
    "min_selfplay_games_per_generation";
inline constexpr std::string_view kModelBnSpan = "model_bn_span";
inline constexpr std::string_view kModelEvalEmaFactor = "model_eval_ema_factor";
inline constexpr std::string_view kModelWeightsInitializationScale =
    "model_weights_initialization_scale";
inline constexpr std::string_view kMoeAuxLossCoeff = "moe_aux_loss_coeff";
inline constexpr std::string_view kNumGenerationsPerPrompt = "num_generations_per_prompt";
inline constexpr std::string_view kNumImageCandidates = "num_image_candidates";
inline constexpr std::string_view kNumPromptsPerStep = "num_prompts_per_step";
inline constexpr std::string_view kNumWarmupSteps = "num_warmup_steps";
inline constexpr std::string_view kOptAdagradEpsilon = "opt_adagrad_epsilon";
inline constexpr std::string_view kOptAdagradInitialAccumulatorValue =
    "opt_adagrad_initial_accumulator_value";
inline constexpr std::string_view kOptAdagradLearningRateDecay = "opt_adagrad_learning_rate_decay";
inline constexpr std::string_view kOptAdamBeta1 = "opt_adam_beta_1";
inline constexpr std::string_view kOptAdamBeta2 = "opt_adam_beta_2";
inline constexpr std::string_view kOptAdamEpsilon = "opt_adam_epsilon";
inline constexpr std::string_view kOptAdamwBeta1 = "opt_adamw_beta_1";
inline constexpr std::string_view kOptAdamwBeta2 = "opt_adamw_beta_2";
inline constexpr std::string_view kOptAdamwEpsilon = "opt_adamw_epsilon";
inline constexpr std::string_view kOptAdamwWeightDecay = "opt_adamw_weight_decay";
inline constexpr std::string_view kOptBaseLearningRate = "opt_base_learning_rate";
inline constexpr std::string_view kOptEndLearningRate = "opt_end_learning_rate";
inline constexpr std::string_view kOptEpsilon = "opt_epsilon";
inline constexpr std::string_view kOptGradientClipNorm = "opt_gradient_clip_norm";
inline constexpr std::string_view kOptLambBeta1 = "opt_lamb_beta_1";
inline constexpr std::string_view kOptLambBeta2 = "opt_lamb_beta_2";
inline constexpr std::string_view kOptLambEpsilon = "opt_lamb_epsilon";
inline constexpr std::string_view kOptLambLearningRateDecayPolyPower =
    "opt_lamb_learning_rate_decay_poly_power";
inline constexpr std::string_view kOptLambLearningRateHoldEpochs =
    "opt_lamb_learning_rate_hold_epochs";
inline constexpr std::string_view kOptLambLearningRateMin = "opt_lamb_learning_rate_min";
inline constexpr std::string_view kOptLambWeightDecayRate = "opt_lamb_weight_decay_rate";
inline constexpr std::string_view kOptLearningRateAltDecayFunc = "opt_learning_rate_alt_decay_func";
inline constexpr std::string_view kOptLearningRateAltWarmupFunc =
    "opt_learning_rate_alt_warmup_func";
inline constexpr std::string_view kOptLearningRateDecayBoundaryEpochs =
    "opt_learning_rate_decay_boundary_epochs";
inline constexpr std::string_view kOptLearningRateDecayBoundarySteps =
    "opt_learning_rate_decay_boundary_steps";
inline constexpr std::string_view kOptLearningRateDecayFactor = "opt_learning_rate_decay_factor";
inline constexpr std::string_view kOptLearningRateDecayInterval =
    "opt_learning_rate_decay_interval";
inline constexpr std::string_view kOptLearningRateDecaySchedule =
    "opt_learning_rate_decay_schedule";
inline constexpr std::string_view kOptLearningRateDecayStartStep =
    "opt_learning_rate_decay_start_step";
inline constexpr std::string_view kOptLearningRateDecaySteps = "opt_learning_rate_decay_steps";
inline constexpr std::string_view kOptLearningRateRemainSteps = "opt_learning_rate_remain_steps";
inline constexpr std::string_view kOptLearningRateTrainingSteps =
    "opt_learning_rate_training_steps";
inline constexpr std::string_view kOptLearningRateWarmupEpochs = "opt_learning_rate_warmup_epochs";
inline constexpr std::string_view kOptLearningRateWarmupFactor = "opt_learning_rate_warmup_factor";
inline constexpr std::string_view kOptLearningRateWarmupSteps = "opt_learning_rate_warmup_steps";
inline constexpr std::string_view kOptMomentum = "opt_momentum";
inline constexpr std::string_view kOptName = "opt_name";
inline constexpr std::string_view kOptWeightDecay = "opt_weight_decay";
inline constexpr std::string_view kOversampling = "oversampling";
inline constexpr std::string_view kSgdOptBaseLearningRate = "sgd_opt_base_learning_rate";
inline constexpr std::string_view kSgdOptEndLearningRate = "sgd_opt_end_learning_rate";
inline constexpr std::string_view kSgdOptLearningRateDecayPolyPower =
    "sgd_opt_learning_rate_decay_poly_power";
inline constexpr std::string_view kSgdOptLearningRateDecaySteps =
    "sgd_opt_learning_rate_decay_steps";
inline constexpr std::string_view kSgdOptMomentum = "sgd_opt_momentum";
inline constexpr std::string_view kSgdOptWeightDecay = "sgd_opt_weight_decay";
inline constexpr std::string_view kStartWarmupStep = "start_warmup_step";
inline constexpr std::string_view kTrainBatchSize = "train_batch_size";
inline constexpr std::string_view kTrainingInputShape = "training_input_shape";
inline constexpr std::string_view kValidationInputShape = "validation_input_shape";
inline constexpr std::string_view kValidationOverlap = "validation_overlap";

// Power measurement.
inline constexpr std::string_view kConversionEff = "conversion_eff";
inline constexpr std::string_view kInterconnectPowerEst = "interconnect_power_est";
inline constexpr std::string_view kPowerMeasurementStart = "power_measurement_start";
inline constexpr std::string_view kPowerMeasurementStop = "power_measurement_stop";
inline constexpr std::string_view kPowerReading = "power_reading";

// Model parallelism and numerical precision (optional keys since 6.0.0).
inline constexpr std::string_view kContextParallelism = "context_parallelism";
inline constexpr std::string_view kExpertParallelism = "expert_parallelism";
inline constexpr std::string_view kLowestNumericalPrecisionInAttn =
    "lowest_numerical_precision_in_attn";
inline constexpr std::string_view kLowestNumericalPrecisionInComm =
    "lowest_numerical_precision_in_comm";
inline constexpr std::string_view kLowestNumericalPrecisionInLinear =
    "lowest_numerical_precision_in_linear";
inline constexpr std::string_view kMicroBatchSize = "micro_batch_size";
inline constexpr std::string_view kPipelineParallelism = "pipeline_parallelism";
inline constexpr std::string_view kTensorParallelism = "tensor_parallelism";

// Every key above, for tools that enumerate them.
inline constexpr std::string_view kAll[] = {
    kSubmissionBenchmark,
    kSubmissionDivision,
    kSubmissionEntry,
    kSubmissionOrg,
    kSubmissionPlatform,
    kSubmissionPocEmail,
    kSubmissionPocName,
    kSubmissionStatus,
    kBlockStart,
    kBlockStop,
    kEpochStart,
    kEpochStop,
    kEvalStart,
    kEvalStop,
    kInitStart,
    kInitStop,
    kRunStart,
    kRunStop,
    kStagingStart,
    kStagingStop,
    kAggregatedEvalAccuracy,
    kAveragedValidationLoss,
    kCacheClear,
    kConfigFilename,
    kEvalAccuracy,
    kEvalSamples,
    kEvaluationFrequency,
    kSeed,
    kTrainSamples,
    kTrainedSamples,
    kWeightsInitialization,
    kActualSelfplayGamesPerGeneration,
    kDataNumBuckets,
    kDataSpecAugmentFreqMax,
    kDataSpecAugmentFreqMin,
    kDataSpecAugmentFreqN,
    kDataSpecAugmentTimeMax,
    kDataSpecAugmentTimeMin,
    kDataSpecAugmentTimeN,
    kDataSpeedPerturbatonMax,
    kDataSpeedPerturbatonMin,
    kDataTrainMaxDuration,
    kDataTrainNumBuckets,
    kEvalMaxPredictionSymbols,
    kGenerationTrainingRolloutTemperature,
    kGenerationTrainingRolloutTopP,
    kGenerationValidationRolloutTemperature,
    kGenerationValidationRolloutTopP,
    kGlobalBatchSize,
    kGradientAccumulationSteps,
    kInitCheckpointStep,
    kLarsEpsilon,
    kLarsOptBaseLearningRate,
    kLarsOptEndLearningRate,
    kLarsOptLearningRateDecayPolyPower,
    kLarsOptLearningRateDecaySteps,
    kLarsOptLearningRateWarmupEpochs,
    kLarsOptMomentum,
    kLarsOptWeightDecay,
    kLoraAlpha,
    kLoraRank,
    kLrBoundaries,
    kLrDecayStartSteps,
    kLrRates,
    kMaxImageSize,
    kMaxSamples,
    kMaxSequenceLength,
    kMaxSteps,
    kMinImageSize,
    kMinSelfplayGamesPerGeneration,
    kModelBnSpan,
    kModelEvalEmaFactor,
    kModelWeightsInitializationScale,
    kMoeAuxLossCoeff,
    kNumGenerationsPerPrompt,
    kNumImageCandidates,
    kNumPromptsPerStep,
    kNumWarmupSteps,
    kOptAdagradEpsilon,
    kOptAdagradInitialAccumulatorValue,
    kOptAdagradLearningRateDecay,
    kOptAdamBeta1,
    kOptAdamBeta2,
    kOptAdamEpsilon,
    kOptAdamwBeta1,
    kOptAdamwBeta2,
    kOptAdamwEpsilon,
    kOptAdamwWeightDecay,
    kOptBaseLearningRate,
    kOptEndLearningRate,
    kOptEpsilon,
    kOptGradientClipNorm,
    kOptLambBeta1,
    kOptLambBeta2,
    kOptLambEpsilon,
    kOptLambLearningRateDecayPolyPower,
    kOptLambLearningRateHoldEpochs,
    kOptLambLearningRateMin,
    kOptLambWeightDecayRate,
    kOptLearningRateAltDecayFunc,
    kOptLearningRateAltWarmupFunc,
    kOptLearningRateDecayBoundaryEpochs,
    kOptLearningRateDecayBoundarySteps,
    kOptLearningRateDecayFactor,
    kOptLearningRateDecayInterval,
    kOptLearningRateDecaySchedule,
    kOptLearningRateDecayStartStep,
    kOptLearningRateDecaySteps,
    kOptLearningRateRemainSteps,
    kOptLearningRateTrainingSteps,
    kOptLearningRateWarmupEpochs,
    kOptLearningRateWarmupFactor,
    kOptLearningRateWarmupSteps,
    kOptMomentum,
    kOptName,
    kOptWeightDecay,
    kOversampling,
    kSgdOptBaseLearningRate,
    kSgdOptEndLearningRate,
    kSgdOptLearningRateDecayPolyPower,
    kSgdOptLearningRateDecaySteps,
    kSgdOptMomentum,
    kSgdOptWeightDecay,
    kStartWarmupStep,
    kTrainBatchSize,
    kTrainingInputShape,
    kValidationInputShape,
    kValidationOverlap,
    kConversionEff,
    kInterconnectPowerEst,
    kPowerMeasurementStart,
    kPowerMeasurementStop,
    kPowerReading,
    kContextParallelism,
    kExpertParallelism,
    kLowestNumericalPrecisionInAttn,
    kLowestNumericalPrecisionInComm,
    kLowestNumericalPrecisionInLinear,
    kMicroBatchSize,
    kPipelineParallelism,
    kTensorParallelism,
};

}  // namespace key

namespace meta {
inline constexpr std::string_view kEpochNum = "epoch_num";
inline constexpr std::string_view kFirstEpochNum = "first_epoch_num";
inline constexpr std::string_view kEpochCount = "epoch_count";
inline constexpr std::string_view kSamplesCount = "samples_count";
inline constexpr std::string_view kStepNum = "step_num";
inline constexpr std::string_view kStatus = "status";
inline constexpr std::string_view kMetric = "metric";
inline constexpr std::string_view kFile = "file";
inline constexpr std::string_view kLineno = "lineno";
}  // namespace meta

// Values of submission_division, submission_status and run_stop's status.
namespace value {
inline constexpr std::string_view kClosed = "closed";
inline constexpr std::string_view kOpen = "open";
inline constexpr std::string_view kOnprem = "onprem";
inline constexpr std::string_view kCloud = "cloud";
inline constexpr std::string_view kPreview = "preview";
inline constexpr std::string_view kResearch = "research";
inline constexpr std::string_view kSuccess = "success";
inline constexpr std::string_view kAborted = "aborted";
}  // namespace value

// Values of submission_benchmark.
namespace benchmark {
inline constexpr std::string_view kBert = "bert";
inline constexpr std::string_view kDeepseekv3671b = "deepseekv3_671b";
inline constexpr std::string_view kDlrm = "dlrm";
inline constexpr std::string_view kDlrmDcnv2 = "dlrm_dcnv2";
inline constexpr std::string_view kFlux1 = "flux1";
inline constexpr std::string_view kGnmt = "gnmt";
inline constexpr std::string_view kGnn = "gnn";
inline constexpr std::string_view kGpt3 = "gpt3";
inline constexpr std::string_view kGptOss20b = "gpt_oss_20b";
inline constexpr std::string_view kLlama270bLora = "llama2_70b_lora";
inline constexpr std::string_view kLlama31405b = "llama31_405b";
inline constexpr std::string_view kLlama318b = "llama31_8b";
inline constexpr std::string_view kMaskrcnn = "maskrcnn";
inline constexpr std::string_view kMinigo = "minigo";
inline constexpr std::string_view kNcf = "ncf";
inline constexpr std::string_view kQwen35397bGrpo = "qwen35_397b_grpo";
inline constexpr std::string_view kResnet = "resnet";
inline constexpr std::string_view kRetinanet = "retinanet";
inline constexpr std::string_view kRgat = "rgat";
inline constexpr std::string_view kRnnt = "rnnt";
inline constexpr std::string_view kSsd = "ssd";
inline constexpr std::string_view kStableDiffusion = "stable_diffusion";
inline constexpr std::string_view kTransformer = "transformer";
inline constexpr std::string_view kUnet3d = "unet3d";
}  // namespace benchmark

// Values of opt_name.
namespace optimizer {
inline constexpr std::string_view kAdagrad = "adagrad";
inline constexpr std::string_view kAdam = "adam";
inline constexpr std::string_view kAdamw = "adamw";
inline constexpr std::string_view kLamb = "lamb";
inline constexpr std::string_view kLars = "lars";
inline constexpr std::string_view kLazyAdam = "lazy_adam";
inline constexpr std::string_view kSgd = "sgd";
}  // namespace optimizer

}  // namespace mlperf::mllog
