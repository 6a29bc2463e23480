//! A speculative-decoding chain verifier in Rust (the standard library only), audited by
//! rheotheory through its process protocol (docs/guide/audit.md, "Any language").
//! p is the target law, q the draft law.
//!
//!   rustc -O --edition 2021 -o verify docs/examples/engines/verify.rs
//!   rheo audit --verifier-cmd ./verify                        # JSON lines
//!   rheo audit --verifier-cmd ./verify --framing binary       # the binary framing
//!   rheo audit --verifier-cmd "./verify --bug accept-power"   # a planted bug
//!
//! Standard rejection sampling: accept draft i with probability min(1, p_i(x_i) / q_i(x_i));
//! at the first rejection emit a token from norm((p_i - q_i)+); after k accepted drafts a bonus
//! token from p_k. A deterministic draft (draft_probs null) has a one-hot q. Every random number
//! of a call comes from a generator seeded with that call's seed (xoshiro256++, seeded through
//! SplitMix64).
//!
//! --bug NAME plants one bug:
//!   accept-power   accept with min(1, (p/q)^0.97): a full-support deviation (TV about 0.018)
//!   skip-residual  draw the correction from p instead of the residual in 10% of rejections
//!   ignore-seed    seed the generator once at start and never with the calls' seeds

use std::io::{self, BufRead, Read, Write};

// -- the generator ---------------------------------------------------------------------------

struct Rng([u64; 4]);

impl Rng {
    fn seeded(seed: u64) -> Rng {
        let mut z = seed;
        let mut next = || {
            z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            x ^ (x >> 31)
        };
        Rng([next(), next(), next(), next()])
    }

    fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        let out = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }

    /// A uniform draw in [0, 1).
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// One token from the non-negative weights `w` (normalised here).
    fn draw(&mut self, w: &[f64]) -> usize {
        let total: f64 = w.iter().sum();
        let u = self.uniform() * total;
        let mut acc = 0.0;
        let mut last = 0;
        for (t, &x) in w.iter().enumerate() {
            if x <= 0.0 {
                continue;
            }
            acc += x;
            last = t;
            if u < acc {
                return t;
            }
        }
        last
    }
}

// -- a minimal JSON reader for the protocol's messages ----------------------------------------

#[derive(Debug)]
enum Json {
    Null,
    Bool,
    Number(f64),
    Text(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    fn items(&self) -> &[Json] {
        match self {
            Json::Array(v) => v,
            _ => &[],
        }
    }
    fn number(&self) -> f64 {
        match self {
            Json::Number(x) => *x,
            _ => f64::NAN,
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn space(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn value(&mut self) -> Json {
        self.space();
        match self.s[self.i] {
            b'{' => {
                self.i += 1;
                let mut fields = Vec::new();
                self.space();
                if self.s[self.i] == b'}' {
                    self.i += 1;
                    return Json::Object(fields);
                }
                loop {
                    self.space();
                    let key = self.text();
                    self.space();
                    self.i += 1; // ':'
                    fields.push((key, self.value()));
                    self.space();
                    self.i += 1;
                    if self.s[self.i - 1] == b'}' {
                        return Json::Object(fields);
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.space();
                if self.s[self.i] == b']' {
                    self.i += 1;
                    return Json::Array(items);
                }
                loop {
                    items.push(self.value());
                    self.space();
                    self.i += 1;
                    if self.s[self.i - 1] == b']' {
                        return Json::Array(items);
                    }
                }
            }
            b'"' => Json::Text(self.text()),
            b'n' => {
                self.i += 4;
                Json::Null
            }
            b't' => {
                self.i += 4;
                Json::Bool
            }
            b'f' => {
                self.i += 5;
                Json::Bool
            }
            _ => {
                let start = self.i;
                while self.i < self.s.len() && b"+-0123456789.eE".contains(&self.s[self.i]) {
                    self.i += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                Json::Number(text.parse().unwrap_or(f64::NAN))
            }
        }
    }
    fn text(&mut self) -> String {
        self.i += 1;
        let mut out = Vec::new();
        while self.s[self.i] != b'"' {
            if self.s[self.i] == b'\\' {
                self.i += 1;
            }
            out.push(self.s[self.i]);
            self.i += 1;
        }
        self.i += 1;
        String::from_utf8(out).unwrap_or_default()
    }
}

fn parse(line: &str) -> Json {
    Parser { s: line.as_bytes(), i: 0 }.value()
}

// -- one call ---------------------------------------------------------------------------------

#[derive(Default)]
struct Call {
    seed: u64,
    k: usize,
    vocab: usize,
    drafts: Vec<usize>,
    q: Option<Vec<f32>>, // [k][V]
    p: Vec<f32>,         // [k+1][V]
}

#[derive(PartialEq, Clone, Copy)]
enum Bug {
    None,
    AcceptPower,
    SkipResidual,
    IgnoreSeed,
}

fn verify(c: &Call, bug: Bug, rng: &mut Rng) -> Vec<usize> {
    let v = c.vocab;
    let mut out = Vec::new();
    for i in 0..c.k {
        let x = c.drafts[i];
        let p: Vec<f64> = c.p[i * v..(i + 1) * v].iter().map(|&t| t as f64).collect();
        let q: Vec<f64> = match &c.q {
            Some(q) => q[i * v..(i + 1) * v].iter().map(|&t| t as f64).collect(),
            None => (0..v).map(|t| if t == x { 1.0 } else { 0.0 }).collect(),
        };
        let mut ratio = if q[x] > 0.0 { p[x] / q[x] } else { 0.0 };
        if bug == Bug::AcceptPower {
            ratio = ratio.powf(0.97);
        }
        if rng.uniform() < ratio.min(1.0) {
            out.push(x);
            continue;
        }
        let r: Vec<f64> = p.iter().zip(&q).map(|(a, b)| (a - b).max(0.0)).collect();
        let mut mass: f64 = r.iter().sum();
        if bug == Bug::SkipResidual && rng.uniform() < 0.1 {
            mass = 0.0;
        }
        out.push(if mass > 0.0 { rng.draw(&r) } else { rng.draw(&p) });
        return out;
    }
    let bonus: Vec<f64> = c.p[c.k * v..(c.k + 1) * v].iter().map(|&t| t as f64).collect();
    out.push(rng.draw(&bonus));
    out
}

fn from_json(j: &Json) -> Call {
    let rows = |key: &str| -> Vec<f32> {
        j.get(key).map_or(Vec::new(), |a| {
            a.items().iter().flat_map(|row| row.items().iter().map(|x| x.number() as f32)).collect()
        })
    };
    let drafts: Vec<usize> = j.get("draft_tokens").map_or(Vec::new(), |a| {
        a.items().iter().map(|t| t.number() as usize).collect()
    });
    let target = j.get("target_probs").map(|a| a.items()).unwrap_or(&[]);
    let vocab = target.first().map_or(0, |row| row.items().len());
    let q = match j.get("draft_probs") {
        Some(Json::Array(_)) => Some(rows("draft_probs")),
        _ => None,
    };
    Call { seed: j.get("seed").map_or(0.0, |s| s.number()) as u64, k: drafts.len(), vocab, drafts, q, p: rows("target_probs") }
}

fn read_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// The binary framing: "RHEO", kind u8, flags u8, u16, n u32, V u32, seed u64, then the arrays.
fn read_binary(input: &mut impl Read) -> Option<Call> {
    let mut head = [0u8; 24];
    input.read_exact(&mut head).ok()?;
    if &head[..4] != b"RHEO" {
        panic!("bad magic");
    }
    let (n, v) = (read_u32(&head[8..]) as usize, read_u32(&head[12..]) as usize);
    let seed = u64::from_le_bytes(head[16..24].try_into().unwrap());
    let has_q = head[5] & 1 == 1;
    let mut body = vec![0u8; 4 * (n + if has_q { n * v } else { 0 } + (n + 1) * v)];
    input.read_exact(&mut body).ok()?;
    let drafts = body[..4 * n].chunks_exact(4).map(|c| read_u32(c) as usize).collect();
    let mut at = 4 * n;
    let q = if has_q {
        at += 4 * n * v;
        Some(floats(&body[4 * n..at]))
    } else {
        None
    };
    Some(Call { seed, k: n, vocab: v, drafts, q, p: floats(&body[at..]) })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut bug = Bug::None;
    if let Some(i) = args.iter().position(|a| a == "--bug") {
        bug = match args.get(i + 1).map(String::as_str) {
            Some("accept-power") => Bug::AcceptPower,
            Some("skip-residual") => Bug::SkipResidual,
            Some("ignore-seed") => Bug::IgnoreSeed,
            other => {
                eprintln!("unknown --bug {:?}", other);
                std::process::exit(2);
            }
        };
    }
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut line = String::new();
    if input.read_line(&mut line).unwrap_or(0) == 0 {
        return; // the handshake
    }
    let hello = parse(&line);
    let binary = matches!(hello.get("framing"), Some(Json::Text(f)) if f == "binary");
    if !matches!(hello.get("kind"), Some(Json::Text(k)) if k == "chain") {
        eprintln!("this example verifies chains only");
        std::process::exit(2);
    }
    writeln!(out, "{{\"protocol\": \"rheo-audit\", \"version\": 1}}").unwrap();
    out.flush().unwrap();
    let mut rng = Rng::seeded(12345);
    loop {
        let call = if binary {
            match read_binary(&mut input) {
                Some(c) => c,
                None => return,
            }
        } else {
            line.clear();
            if input.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            from_json(&parse(&line))
        };
        if bug != Bug::IgnoreSeed {
            rng = Rng::seeded(call.seed);
        }
        let toks = verify(&call, bug, &mut rng);
        if binary {
            let mut msg = b"RHEO".to_vec();
            msg.extend_from_slice(&(toks.len() as u32).to_le_bytes());
            for t in &toks {
                msg.extend_from_slice(&(*t as i32).to_le_bytes());
            }
            out.write_all(&msg).unwrap();
        } else {
            let text: Vec<String> = toks.iter().map(|t| t.to_string()).collect();
            writeln!(out, "[{}]", text.join(",")).unwrap();
        }
        out.flush().unwrap();
    }
}
