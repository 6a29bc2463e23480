// llama.cpp's own speculative accept step, driven by rheotheory's audit at chosen laws.
//
// A verifier program of the audit's process protocol (rheotheory/audit/process.py, binary
// framing, chain calls) that hands each call to the function llama-server calls to verify a
// draft (tools/server/server-context.cpp, "main model sample and accept"):
//
//   --path match      common_sampler_sample_and_accept_n: the target samples each position
//                     through its sampler chain and a draft token is kept iff it equals the
//                     sample (the server's default, greedy drafts);
//   --path rejection  common_sampler_sample_and_accept_n_rejection: min(1, p/q) against the
//                     draft's candidate probabilities, the residual after a rejection
//                     (--spec-draft-sampling probabilistic).
//
// Their code, and the sampler chain they call (common_sampler_init with the server's
// common_params_sampling: --temp T, and either llama.cpp's default top-k 40, top-p 0.95,
// min-p 0.05 or no cut), runs as built from the pinned sdist; this harness links against
// libllama-common and libllama and only replaces the model's forward pass: it defines the
// llama_context accessors those functions read (llama_get_logits_ith and the backend-sampling
// accessors, which answer "nothing sampled"), so each position's logits are the call's target
// law. The vocabulary is a real one (a GGUF loaded with vocab_only): toy token t is the
// model's token BASE + t, every other token has logit -inf. The logits are T * log p, so that
// after the chain's temperature the law is p again; a chain that cuts (top-p, min-p) leaves p
// as it is when every positive p is above its thresholds, which the audit's settings ensure
// (rheotheory.audit.engines.llamacpp_protocol). Every random number of a call comes from the
// sampler created for that call with the call's seed (the chain's dist sampler, and the
// rejection path's generator, which llama.cpp seeds from the chain's seed).
//
// Build: python -m rheotheory.audit.engines.llamacpp build (links this file against the build).

#include "llama.h"
#include "common.h"
#include "sampling.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

std::vector<std::vector<float>> g_logits;  // [positions][n_vocab]: the call's target logits
const llama_model * g_model = nullptr;     // the vocabulary's (vocab_only) model

bool read_exact(void * buf, size_t n) { return std::fread(buf, 1, n, stdin) == n; }

int fail(const std::string & msg) {
    std::fprintf(stderr, "llamacpp_harness: %s\n", msg.c_str());
    return 2;
}

}  // namespace

// -- the context accessors llama.cpp's accept step reads (they replace libllama's) --------------

void llama_synchronize(struct llama_context *) {}

const struct llama_model * llama_get_model(const struct llama_context *) { return g_model; }

float * llama_get_logits_ith(struct llama_context *, int32_t i) {
    return i >= 0 && static_cast<size_t>(i) < g_logits.size() ? g_logits[i].data() : nullptr;
}

llama_token llama_get_sampled_token_ith(struct llama_context *, int32_t) { return LLAMA_TOKEN_NULL; }
float * llama_get_sampled_probs_ith(struct llama_context *, int32_t) { return nullptr; }
uint32_t llama_get_sampled_probs_count_ith(struct llama_context *, int32_t) { return 0; }
float * llama_get_sampled_logits_ith(struct llama_context *, int32_t) { return nullptr; }
uint32_t llama_get_sampled_logits_count_ith(struct llama_context *, int32_t) { return 0; }
llama_token * llama_get_sampled_candidates_ith(struct llama_context *, int32_t) { return nullptr; }
uint32_t llama_get_sampled_candidates_count_ith(struct llama_context *, int32_t) { return 0; }

int main(int argc, char ** argv) {
    std::string path = "match", chain = "default", vocab_path;
    float temp = 1.0f;
    int base = 1000;
    for (int a = 1; a + 1 < argc; a += 2) {
        const std::string k = argv[a], v = argv[a + 1];
        if (k == "--path") path = v;
        else if (k == "--chain") chain = v;
        else if (k == "--temp") temp = std::stof(v);
        else if (k == "--vocab") vocab_path = v;
        else if (k == "--base") base = std::stoi(v);
        else return fail("unknown option " + k);
    }
    if (path != "match" && path != "rejection") return fail("--path must be match or rejection");
    if (chain != "default" && chain != "none") return fail("--chain must be default or none");
    if (vocab_path.empty()) return fail("--vocab GGUF is required");

    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model * model = llama_model_load_from_file(vocab_path.c_str(), mp);
    if (!model) return fail("cannot load the vocabulary of " + vocab_path);
    g_model = model;
    const llama_vocab * vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);

    common_params_sampling sp;  // llama.cpp's defaults, as the server starts from
    sp.temp = temp;
    if (chain == "none") {
        sp.top_k = 0;
        sp.top_p = 1.0f;
        sp.min_p = 0.0f;
    }

    std::string line;
    if (!std::getline(std::cin, line)) return 0;  // the handshake
    if (line.find("\"binary\"") == std::string::npos) return fail("run with --framing binary");
    if (line.find("\"chain\"") == std::string::npos) return fail("run with --kind chain");
    std::cout << "{\"protocol\": \"rheo-audit\", \"version\": 1}" << std::endl;

    llama_context * ctx = reinterpret_cast<llama_context *>(&g_logits);  // NOTE: never dereferenced
    while (true) {
        unsigned char head[24];
        if (!read_exact(head, sizeof head)) return 0;
        if (std::memcmp(head, "RHEO", 4) != 0) return fail("bad magic");
        uint32_t n, v;
        uint64_t seed;
        std::memcpy(&n, head + 8, 4);
        std::memcpy(&v, head + 12, 4);
        std::memcpy(&seed, head + 16, 8);
        if (base + static_cast<int>(v) > n_vocab) return fail("the toy vocabulary does not fit");
        const bool has_q = head[5] & 1;
        std::vector<int32_t> drafts(n);
        std::vector<float> q(has_q ? n * v : 0), p((n + 1) * v);
        if (!read_exact(drafts.data(), 4 * n) || (has_q && !read_exact(q.data(), 4 * q.size())) ||
            !read_exact(p.data(), 4 * p.size())) {
            return 0;
        }
        g_logits.assign(n + 1, std::vector<float>(n_vocab, -INFINITY));
        for (uint32_t i = 0; i <= n; ++i)
            for (uint32_t t = 0; t < v; ++t)
                if (p[i * v + t] > 0) g_logits[i][base + t] = temp * std::log(p[i * v + t]);
        llama_tokens draft(n);
        std::vector<std::vector<llama_token_data>> draft_q(n);
        for (uint32_t i = 0; i < n; ++i) {
            draft[i] = base + drafts[i];
            for (uint32_t t = 0; t < v; ++t) {
                const float qt = has_q ? q[i * v + t] : (static_cast<int32_t>(t) == drafts[i] ? 1.0f : 0.0f);
                if (qt > 0) draft_q[i].push_back({static_cast<llama_token>(base + t), std::log(qt), qt});
            }
        }
        sp.seed = static_cast<uint32_t>(seed % 0xFFFFFFFFu);  // NOTE: never LLAMA_DEFAULT_SEED ("random")
        common_sampler * smpl = common_sampler_init(model, sp);
        std::vector<int> idxs(n + 1);
        for (uint32_t i = 0; i <= n; ++i) idxs[i] = static_cast<int>(i);
        const std::vector<llama_token> got = path == "match"
            ? common_sampler_sample_and_accept_n(smpl, ctx, idxs, draft)
            : common_sampler_sample_and_accept_n_rejection(smpl, ctx, idxs, draft, draft_q);
        common_sampler_free(smpl);
        const uint32_t m = static_cast<uint32_t>(got.size());
        std::vector<int32_t> out(m);
        for (uint32_t i = 0; i < m; ++i) out[i] = got[i] - base;
        std::fwrite("RHEO", 1, 4, stdout);
        std::fwrite(&m, 4, 1, stdout);
        std::fwrite(out.data(), 4, m, stdout);
        std::fflush(stdout);
    }
}
