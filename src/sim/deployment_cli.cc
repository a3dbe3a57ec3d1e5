#include "sim/deployment_cli.h"

#include <CLI/CLI.hpp>

#include "sim/engine.h"
#include "sim/engine_preset.h"

namespace tokperf::sim {

void add_deployment_flags(CLI::App& sub, DeploymentFlags& f, const std::string& model_flag,
                          const std::string& group) {
  std::vector<CLI::Option*> opts;
  opts.push_back(
      sub.add_option(model_flag, f.model,
                     "built-in model: llama-2-7b, llama-2-70b, llama-3.1-8b, llama-3.1-70b, "
                     "qwen2.5-7b, qwen2.5-72b, mistral-7b, mixtral-8x7b, deepseek-v3")
          ->capture_default_str());
  opts.push_back(sub.add_option("--model-config", f.model_config,
                                "a Hugging Face config.json to use instead of " + model_flag));
  opts.push_back(
      sub.add_option(
             "--gpu", f.gpu,
             "built-in GPU: a100-40g, a100-80g, h100, h200, l40s, rtx4090, a10g, l4, mi300x")
          ->capture_default_str());
  opts.push_back(
      sub.add_option("--gpu-spec", f.gpu_spec, "a GPU spec JSON file to use instead of --gpu"));
  opts.push_back(sub.add_option("--dtype", f.dtype, "weight format: fp16, bf16, fp8, int8, int4")
                     ->capture_default_str());
  opts.push_back(
      sub.add_option("--kv-dtype", f.kv_dtype, "KV-cache format: auto, fp16, bf16, fp8, int8")
          ->capture_default_str());
  opts.push_back(sub.add_option("--tp", f.tp, "tensor-parallel GPUs")->capture_default_str());
  opts.push_back(sub.add_flag("--dp-attention", f.dp_attention,
                              "data-parallel attention over the --tp GPUs (SGLang's "
                              "--enable-dp-attention): whole attention weights and per-GPU KV"));
  if (!group.empty()) {
    for (CLI::Option* o : opts) o->group(group);
  }
}

void add_engine_flag(CLI::App& sub, DeploymentFlags& f, const std::string& group) {
  CLI::Option* o = sub.add_option("--engine", f.engine,
                                  "serving engine whose defaults apply (KV dtype, memory, batch "
                                  "limits, admission, overheads): " +
                                      engine_preset_names())
                       ->capture_default_str();
  CLI::Option* g =
      sub.add_option("--cuda-graph-max-batch", f.cuda_graph_max_batch,
                     "CUDA graphs: 0 runs every step eager (vLLM --enforce-eager, SGLang "
                     "--disable-cuda-graph): each step costs at least the host's time to launch "
                     "its kernels; N captures decode-only batches of up to N sequences, the rest "
                     "eager; default: not modelled (every step as fast as a graph)")
          ->check(CLI::Range(0, 1 << 20));
  CLI::Option* kv =
      sub.add_option("--kv-cache-tokens", f.kv_cache_tokens,
                     "the KV cache's size in tokens as your engine logged it at start-up (vLLM "
                     "\"GPU KV cache size: N tokens\" or \"# GPU blocks\" x block size; SGLang "
                     "max_total_num_tokens, per GPU under --dp-attention); default: computed "
                     "from memory")
          ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  CLI::Option* fe =
      sub.add_option("--frontend-us-per-token", f.frontend_us_per_token,
                     "the serving front end's time per streamed token of each request, in "
                     "microseconds (detokenise, build and write the chunk; one thread, shared with "
                     "new requests' set-up): a property of the host's CPU as much as of the "
                     "engine; default: the --engine preset's (vllm and vllm-0.13: 68.3, measured from "
                     "the token arrivals of one 8xH100 host's runs; the others 0: not modelled)")
          ->check(CLI::Range(0.0, 1e6));
  CLI::Option* fr =
      sub.add_option("--frontend-ms-per-request", f.frontend_ms_per_request,
                     "the serving front end's serial time to set each request up, in milliseconds "
                     "(parse, tokenise, hand to the scheduler; the same thread as the streamed "
                     "tokens): like --frontend-us-per-token a property of the host's CPU; default: "
                     "the --engine preset's (vllm and vllm-0.13 5.52, vllm-v0 and sglang 2.04, sglang-0.4 0, "
                     "trtllm and nim 4.83 plus 4.51 us per prompt token; fitted on the "
                     "calibration runs' hosts)")
          ->check(CLI::Range(0.0, 1e6));
  CLI::Option* ctx =
      sub.add_option("--max-model-len,--context-length", f.max_model_len,
                     "the context length the engine serves (vLLM's --max-model-len, SGLang's "
                     "--context-length; either name): vLLM V0's token budget, SGLang's request "
                     "pool and the simulated server's limit follow it, and longer requests get "
                     "the server's 400; default: the model's max_position_embeddings")
          ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  CLI::Option* knob =
      sub.add_option("--knob", f.knobs,
                     "NAME=VALUE (repeatable): replace one of the --engine preset's knobs for a "
                     "what-if, by its field name, e.g. step_overhead_s=0.002, overlap_schedule=0|1 "
                     "(the next batch formed while a step runs: on in vllm, vLLM's async "
                     "scheduling since 0.14; opt-in for sglang) or the opt-in mechanisms "
                     "dp_attention_halves_chunk_per_rank=1 (sglang-0.4), "
                     "unified_kv_attention=1 (llama.cpp's one KV cache for all slots) and "
                     "outputs_before_setups=1 (the front end passes a step's outputs before the "
                     "set-ups still queued); an unknown "
                     "name is refused with the list (docs/SIMULATOR.md, \"Knobs\")");
  CLI::Option* cal =
      sub.add_option("--calibration", f.calibration,
                     "FILE written by sim calibrate --out: the constants it fitted to your server "
                     "replace the --engine preset's (--knob applies on top); the run says how well "
                     "that fit did on its own check");
  if (!group.empty()) {
    cal->group(group);
    o->group(group);
    g->group(group);
    knob->group(group);
    kv->group(group);
    fe->group(group);
    fr->group(group);
    ctx->group(group);
  }
}

void add_batch_limit_flags(CLI::App& sub, EngineConfig& engine, const std::string& group) {
  CLI::Option* seqs = sub.add_option(
      "--max-num-seqs", engine.max_num_seqs,
      "engine batch limit (default: the --engine preset's for the GPU; vllm: 1024 on GPUs with "
      ">= 70 GiB other than A100, else 256)");
  CLI::Option* tokens = sub.add_option(
      "--max-num-batched-tokens", engine.max_num_batched_tokens,
      "engine per-step token budget (default: the --engine preset's for the GPU; vllm: 8192 on "
      "GPUs with >= 70 GiB other than A100, else 2048; vllm-v0: max(max_model_len, 2048))");
  if (!group.empty()) {
    seqs->group(group);
    tokens->group(group);
  }
}

bool deployment_flags_given(const CLI::App& sub, const std::string& model_flag) {
  for (const std::string& name :
       {model_flag, std::string("--model-config"), std::string("--gpu"), std::string("--gpu-spec"),
        std::string("--dtype"), std::string("--kv-dtype"), std::string("--tp"),
        std::string("--dp-attention")}) {
    const CLI::Option* o = sub.get_option_no_throw(name);
    if (o != nullptr && o->count() > 0) return true;
  }
  return false;
}

nlohmann::json deployment_json(const DeploymentFlags& d) {
  return {{"source", "simulated"},
          {"model", d.model},
          {"model_config", d.model_config},
          {"gpu", d.gpu},
          {"gpu_spec", d.gpu_spec},
          {"dtype", d.dtype},
          {"kv_dtype", d.kv_dtype},
          {"tp", d.tp},
          {"dp_attention", d.dp_attention},
          {"max_model_len", d.max_model_len},
          {"engine", d.engine},
          {"cuda_graph_max_batch", d.cuda_graph_max_batch},
          {"kv_cache_tokens", d.kv_cache_tokens},
          {"frontend_us_per_token", d.frontend_us_per_token},
          {"frontend_ms_per_request", d.frontend_ms_per_request},
          {"knobs", d.knobs},
          {"calibration", d.calibration}};
}

}  // namespace tokperf::sim
