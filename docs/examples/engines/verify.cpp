// A speculative-decoding chain verifier in C++, audited by rheotheory through its process
// protocol (docs/guide/audit.md, "Any language"). p is the target law, q the draft law.
//
//   g++ -O2 -std=c++17 -o verify docs/examples/engines/verify.cpp
//   rheo audit --verifier-cmd ./verify                        # JSON lines
//   rheo audit --verifier-cmd ./verify --framing binary       # the binary framing
//   rheo audit --verifier-cmd "./verify --bug accept-power"   # a planted bug
//
// The verifier is standard rejection sampling (Leviathan et al. 2023): accept draft i with
// probability min(1, p_i(x_i) / q_i(x_i)); at the first rejection emit a token from
// norm((p_i - q_i)+); after k accepted drafts emit a bonus token from p_k. A deterministic
// draft (draft_probs null) has a one-hot q. Every random number of a call comes from a
// generator seeded with that call's seed.
//
// --bug NAME plants one bug, for the audit to catch:
//   accept-power   accept with min(1, (p/q)^0.97): a full-support deviation (TV about 0.018)
//   skip-residual  draw the correction from p instead of the residual in 10% of rejections
//   ignore-seed    seed the generator once at start and never with the calls' seeds

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// -- a minimal JSON reader for the protocol's messages (objects, arrays, numbers, strings, null)
struct Json {
  enum Kind { Null, Number, String, Array, Object, Bool } kind = Null;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;
  const Json* get(const std::string& key) const {
    for (const auto& f : fields)
      if (f.first == key) return &f.second;
    return nullptr;
  }
};

struct Reader {
  const std::string& s;
  size_t i = 0;
  explicit Reader(const std::string& text) : s(text) {}
  void space() { while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i; }
  Json value() {
    space();
    if (i >= s.size()) throw std::runtime_error("unexpected end of JSON");
    Json v;
    char c = s[i];
    if (c == '{') {
      v.kind = Json::Object;
      ++i;
      space();
      if (s[i] == '}') { ++i; return v; }
      while (true) {
        space();
        std::string key = string();
        space();
        ++i;  // ':'
        v.fields.emplace_back(key, value());
        space();
        if (s[i++] == '}') return v;
      }
    }
    if (c == '[') {
      v.kind = Json::Array;
      ++i;
      space();
      if (s[i] == ']') { ++i; return v; }
      while (true) {
        v.items.push_back(value());
        space();
        if (s[i++] == ']') return v;
      }
    }
    if (c == '"') { v.kind = Json::String; v.text = string(); return v; }
    if (s.compare(i, 4, "null") == 0) { i += 4; return v; }
    if (s.compare(i, 4, "true") == 0) { i += 4; v.kind = Json::Bool; v.number = 1; return v; }
    if (s.compare(i, 5, "false") == 0) { i += 5; v.kind = Json::Bool; return v; }
    char* end = nullptr;
    v.kind = Json::Number;
    v.number = std::strtod(s.c_str() + i, &end);
    if (end == s.c_str() + i) throw std::runtime_error("bad JSON number");
    i = static_cast<size_t>(end - s.c_str());
    return v;
  }
  std::string string() {
    std::string out;
    ++i;  // opening quote
    while (s[i] != '"') {
      if (s[i] == '\\') ++i;
      out += s[i++];
    }
    ++i;
    return out;
  }
};

// -- one call ---------------------------------------------------------------------------------
struct Call {
  uint64_t seed = 0;
  int k = 0, vocab = 0;
  bool has_q = false;
  std::vector<int32_t> drafts;
  std::vector<float> q;  // [k][V], when has_q
  std::vector<float> p;  // [k+1][V]
};

enum class Bug { None, AcceptPower, SkipResidual, IgnoreSeed };

double uniform(std::mt19937_64& gen) { return static_cast<double>(gen() >> 11) * 0x1.0p-53; }

// One token drawn from the non-negative weights w (normalised here).
int draw(const std::vector<double>& w, std::mt19937_64& gen) {
  double total = 0;
  for (double x : w) total += x;
  double u = uniform(gen) * total, acc = 0;
  int last = 0;
  for (size_t t = 0; t < w.size(); ++t) {
    if (w[t] <= 0) continue;
    acc += w[t];
    last = static_cast<int>(t);
    if (u < acc) return last;
  }
  return last;
}

std::vector<int> verify(const Call& c, Bug bug, std::mt19937_64& gen) {
  const int V = c.vocab;
  std::vector<int> out;
  for (int i = 0; i < c.k; ++i) {
    const int x = c.drafts[i];
    std::vector<double> p(V), q(V, 0.0);
    for (int t = 0; t < V; ++t) p[t] = c.p[i * V + t];
    if (c.has_q)
      for (int t = 0; t < V; ++t) q[t] = c.q[i * V + t];
    else
      q[x] = 1.0;
    double ratio = q[x] > 0 ? p[x] / q[x] : 0.0;
    if (bug == Bug::AcceptPower) ratio = std::pow(ratio, 0.97);
    if (uniform(gen) < std::min(1.0, ratio)) {
      out.push_back(x);
      continue;
    }
    std::vector<double> r(V);
    double mass = 0;
    for (int t = 0; t < V; ++t) mass += (r[t] = std::max(p[t] - q[t], 0.0));
    if (bug == Bug::SkipResidual && uniform(gen) < 0.1) mass = 0;
    out.push_back(draw(mass > 0 ? r : p, gen));
    return out;
  }
  std::vector<double> bonus(V);
  for (int t = 0; t < V; ++t) bonus[t] = c.p[c.k * V + t];
  out.push_back(draw(bonus, gen));
  return out;
}

Call from_json(const Json& j) {
  Call c;
  c.seed = static_cast<uint64_t>(j.get("seed")->number);
  for (const auto& t : j.get("draft_tokens")->items) c.drafts.push_back(static_cast<int32_t>(t.number));
  c.k = static_cast<int>(c.drafts.size());
  const Json* p = j.get("target_probs");
  c.vocab = static_cast<int>(p->items.at(0).items.size());
  for (const auto& row : p->items)
    for (const auto& x : row.items) c.p.push_back(static_cast<float>(x.number));
  const Json* q = j.get("draft_probs");
  c.has_q = q != nullptr && q->kind == Json::Array;
  if (c.has_q)
    for (const auto& row : q->items)
      for (const auto& x : row.items) c.q.push_back(static_cast<float>(x.number));
  return c;
}

bool read_exact(void* buf, size_t n) { return std::fread(buf, 1, n, stdin) == n; }

// The binary framing: "RHEO", kind u8, flags u8, u16, n u32, V u32, seed u64, then the arrays.
bool read_binary(Call& c) {
  unsigned char head[24];
  if (!read_exact(head, sizeof head)) return false;
  if (std::memcmp(head, "RHEO", 4) != 0) throw std::runtime_error("bad magic");
  uint32_t n, v;
  std::memcpy(&n, head + 8, 4);
  std::memcpy(&v, head + 12, 4);
  std::memcpy(&c.seed, head + 16, 8);
  c.k = static_cast<int>(n);
  c.vocab = static_cast<int>(v);
  c.has_q = head[5] & 1;
  c.drafts.resize(n);
  c.q.resize(c.has_q ? n * v : 0);
  c.p.resize((n + 1) * v);
  return read_exact(c.drafts.data(), 4 * n) && (!c.has_q || read_exact(c.q.data(), 4 * c.q.size())) &&
         read_exact(c.p.data(), 4 * c.p.size());
}

void write_binary(const std::vector<int>& toks) {
  uint32_t m = static_cast<uint32_t>(toks.size());
  std::vector<int32_t> t(toks.begin(), toks.end());
  std::fwrite("RHEO", 1, 4, stdout);
  std::fwrite(&m, 4, 1, stdout);
  std::fwrite(t.data(), 4, m, stdout);
  std::fflush(stdout);
}

void write_json(const std::vector<int>& toks) {
  std::string line = "[";
  for (size_t i = 0; i < toks.size(); ++i) line += (i ? "," : "") + std::to_string(toks[i]);
  line += "]\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Bug bug = Bug::None;
  for (int a = 1; a + 1 < argc; ++a)
    if (std::string(argv[a]) == "--bug") {
      std::string b = argv[a + 1];
      bug = b == "accept-power" ? Bug::AcceptPower : b == "skip-residual" ? Bug::SkipResidual
          : b == "ignore-seed" ? Bug::IgnoreSeed : Bug::None;
      if (bug == Bug::None) { std::cerr << "unknown --bug " << b << "\n"; return 2; }
    }
  std::string line;
  if (!std::getline(std::cin, line)) return 0;  // the handshake
  const Json hello = Reader(line).value();
  const bool binary = hello.get("framing") && hello.get("framing")->text == "binary";
  if (hello.get("kind") && hello.get("kind")->text != "chain") {
    std::cerr << "this example verifies chains only\n";
    return 2;
  }
  std::cout << "{\"protocol\": \"rheo-audit\", \"version\": 1}" << std::endl;
  std::mt19937_64 gen(12345);
  while (true) {
    Call c;
    if (binary) {
      if (!read_binary(c)) return 0;
    } else {
      if (!std::getline(std::cin, line)) return 0;
      c = from_json(Reader(line).value());
    }
    if (bug != Bug::IgnoreSeed) gen.seed(c.seed);
    const std::vector<int> toks = verify(c, bug, gen);
    binary ? write_binary(toks) : write_json(toks);
  }
}
