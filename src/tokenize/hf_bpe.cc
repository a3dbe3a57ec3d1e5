#include "tokenize/hf_bpe.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>
#include <utf8proc.h>
#include <nlohmann/json.hpp>

#include "core/utf8.h"

namespace tokperf {
namespace {

using nlohmann::json;

// GPT-2's pre-tokenizer pattern: what ByteLevel with use_regex splits by.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

constexpr const char* kAccepted =
    "accepted: a tokenizer.json with a byte-level BPE model (Llama-3, Qwen2/3, GPT-4o, "
    "DeepSeek-V3 style) or a SentencePiece .model file";

std::string type_of(const json& j) {
  if (!j.is_object()) return "";
  auto it = j.find("type");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

bool flag(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

bool is_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool is_word_byte(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         c >= 0x80;
}

}  // namespace

Result<std::unique_ptr<HfBpeTokenizer>> HfBpeTokenizer::from_json(std::string_view text,
                                                                  const std::string& file) {
  auto fail = [&](const std::string& what) {
    return Error{fmt::format("tokenizer '{}': {}", file, what)};
  };
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return fail(
        fmt::format("not a JSON object (expected a Hugging Face tokenizer.json); {}", kAccepted));
  }
  std::unique_ptr<HfBpeTokenizer> t(new HfBpeTokenizer());
  t->name_ = tokenizer_label(file);

  // The model.
  auto mit = j.find("model");
  if (mit == j.end() || !mit->is_object()) return fail("no \"model\" object");
  const json& model = *mit;
  std::string type = type_of(model);
  if (type.empty() && model.contains("merges")) type = "BPE";
  if (type != "BPE") {
    return fail(fmt::format("its model is {}, which tokperf does not implement; {}",
                            type.empty() ? "of no type" : "\"" + type + "\"", kAccepted));
  }
  if (model.contains("dropout") && model["dropout"].is_number() &&
      model["dropout"].get<double>() > 0) {
    return fail("BPE dropout is set: its encoding is random, so no exact count exists");
  }
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(k) && model[k].is_string() && !model[k].get<std::string>().empty()) {
      return fail(fmt::format("the BPE model has a {} (a non-byte-level BPE); {}", k, kAccepted));
    }
  }
  auto vit = model.find("vocab");
  if (vit == model.end() || !vit->is_object() || vit->empty()) {
    return fail("the BPE model has no \"vocab\" object");
  }
  std::unordered_map<std::string, int32_t> vocab;
  vocab.reserve(vit->size());
  for (auto it = vit->begin(); it != vit->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() > INT32_MAX) {
      return fail(fmt::format("vocab entry '{}' has no non-negative integer id", it.key()));
    }
    vocab.emplace(it.key(), it.value().get<int32_t>());
  }
  std::vector<std::pair<std::string, std::string>> merges;
  if (auto it = model.find("merges"); it != model.end()) {
    if (!it->is_array()) return fail("\"merges\" is not an array");
    merges.reserve(it->size());
    for (size_t r = 0; r < it->size(); ++r) {
      const json& m = (*it)[r];
      if (m.is_string()) {
        const std::string& s = m.get_ref<const std::string&>();
        size_t sp = s.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size() ||
            s.find(' ', sp + 1) != std::string::npos) {
          return fail(fmt::format("merge {} '{}' is not two tokens separated by one space", r, s));
        }
        merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      } else {
        return fail(fmt::format("merge {} is neither \"a b\" nor [\"a\", \"b\"]", r));
      }
    }
  }

  // The normalizer.
  const json norm = j.value("normalizer", json());
  std::vector<json> norms;
  if (type_of(norm) == "Sequence") {
    for (const auto& n : norm.value("normalizers", json::array())) norms.push_back(n);
  } else if (!norm.is_null()) {
    norms.push_back(norm);
  }
  for (const auto& n : norms) {
    const std::string nt = type_of(n);
    if (nt == "NFC")
      t->normalizers_.push_back(Normalization::kNfc);
    else if (nt == "NFD")
      t->normalizers_.push_back(Normalization::kNfd);
    else if (nt == "NFKC")
      t->normalizers_.push_back(Normalization::kNfkc);
    else if (nt == "NFKD")
      t->normalizers_.push_back(Normalization::kNfkd);
    else {
      return fail(fmt::format(
          "normalizer \"{}\" is not implemented (accepted: NFC, NFD, NFKC, NFKD, a Sequence of "
          "them, or none){}",
          nt,
          nt == "Prepend" || nt == "Replace"
              ? "; this looks like a SentencePiece tokenizer: pass its tokenizer.model"
              : ""));
    }
  }

  // The pre-tokenizer: Split/Digits steps, then ByteLevel last.
  const json pre = j.value("pre_tokenizer", json());
  std::vector<json> steps;
  if (type_of(pre) == "Sequence") {
    for (const auto& p : pre.value("pretokenizers", json::array())) steps.push_back(p);
  } else if (!pre.is_null()) {
    steps.push_back(pre);
  }
  bool byte_level = false;
  for (size_t k = 0; k < steps.size(); ++k) {
    const json& p = steps[k];
    const std::string pt = type_of(p);
    if (byte_level) {
      return fail(
          fmt::format("pre-tokenizer \"{}\" follows ByteLevel; only Split and Digits "
                      "steps before a final ByteLevel are implemented",
                      pt));
    }
    if (pt == "Split") {
      const json pat = p.value("pattern", json());
      std::string pattern;
      bool literal = false;
      if (pat.is_object() && pat.contains("Regex") && pat["Regex"].is_string()) {
        pattern = pat["Regex"].get<std::string>();
      } else if (pat.is_object() && pat.contains("String") && pat["String"].is_string()) {
        pattern = pat["String"].get<std::string>();
        literal = true;
      } else {
        return fail("a Split pre-tokenizer has no {\"Regex\"} or {\"String\"} pattern");
      }
      const std::string behavior = p.value("behavior", "");
      SplitBehavior b;
      if (behavior == "Isolated")
        b = SplitBehavior::kIsolated;
      else if (behavior == "Removed")
        b = SplitBehavior::kRemoved;
      else {
        return fail(
            fmt::format("Split behavior \"{}\" is not implemented (accepted: Isolated, "
                        "Removed)",
                        behavior));
      }
      auto s = RegexSplitter::create(pattern, literal, b, flag(p, "invert", false));
      if (!s) return fail(s.error());
      t->pre_steps_.push_back({*s});
    } else if (pt == "Digits") {
      auto s = RegexSplitter::create(flag(p, "individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)",
                                     false, SplitBehavior::kIsolated, false);
      if (!s) return fail(s.error());
      t->pre_steps_.push_back({*s});
    } else if (pt == "ByteLevel") {
      byte_level = true;
      t->add_prefix_space_ = flag(p, "add_prefix_space", false);
      if (flag(p, "use_regex", true)) {
        auto s = RegexSplitter::create(kGpt2Pattern, false, SplitBehavior::kIsolated, false);
        if (!s) return fail(s.error());
        t->byte_level_split_ = *s;
      }
    } else {
      return fail(fmt::format(
          "pre-tokenizer \"{}\" is not implemented (accepted: ByteLevel, after Split and Digits "
          "steps){}",
          pt.empty() ? "(none)" : pt,
          pt == "Metaspace" ? "; this is a SentencePiece-style tokenizer: pass its tokenizer.model"
                            : ""));
    }
  }
  if (!byte_level) {
    return fail(fmt::format("no ByteLevel pre-tokenizer: not a byte-level BPE; {}", kAccepted));
  }

  auto bpe = BpeModel::create(std::move(vocab), merges, flag(model, "ignore_merges", false));
  if (!bpe) return fail(bpe.error());
  t->model_ = std::make_unique<BpeModel>(std::move(*bpe));

  // Added tokens, longest first so that the leftmost match is also the longest.
  if (auto it = j.find("added_tokens"); it != j.end() && it->is_array()) {
    for (const auto& a : *it) {
      if (!a.is_object() || !a.contains("content") || !a["content"].is_string() ||
          !a.contains("id") || !a["id"].is_number_integer()) {
        return fail("an added_tokens entry lacks a string \"content\" or an integer \"id\"");
      }
      AddedToken tok{a["content"].get<std::string>(), a["id"].get<int32_t>(),
                     flag(a, "lstrip", false), flag(a, "rstrip", false),
                     flag(a, "single_word", false)};
      if (tok.content.empty()) continue;
      t->added_.push_back(std::move(tok));
    }
  }
  std::stable_sort(t->added_.begin(), t->added_.end(), [](const auto& a, const auto& b) {
    return a.content.size() > b.content.size();
  });
  for (const auto& a : t->added_) t->added_first_[static_cast<unsigned char>(a.content[0])] = true;
  t->summary_ = fmt::format("byte-level BPE (tokenizer.json: {} tokens, {} merges, {} added)",
                            t->model_->vocab_size(), t->model_->merge_count(), t->added_.size());
  return t;
}

std::string HfBpeTokenizer::kind() const { return summary_; }

std::string HfBpeTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) {
    auto it =
        std::find_if(added_.begin(), added_.end(), [&](const AddedToken& a) { return a.id == id; });
    out += it != added_.end() ? it->content : model_->token_bytes(id);
  }
  return out;
}

Status HfBpeTokenizer::encode_part(std::string_view text, std::vector<int32_t>* ids) const {
  if (text.empty()) return Status::Ok();
  std::string normalized(text);
  const bool ascii = std::all_of(text.begin(), text.end(),
                                 [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (!ascii) {  // ASCII is its own normal form in all four
    for (Normalization n : normalizers_) {
      int options = UTF8PROC_STABLE;
      switch (n) {
        case Normalization::kNfc:
          options |= UTF8PROC_COMPOSE;
          break;
        case Normalization::kNfd:
          options |= UTF8PROC_DECOMPOSE;
          break;
        case Normalization::kNfkc:
          options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
          break;
        case Normalization::kNfkd:
          options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
          break;
      }
      utf8proc_uint8_t* out = nullptr;
      utf8proc_ssize_t len =
          utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(normalized.data()),
                       static_cast<utf8proc_ssize_t>(normalized.size()), &out,
                       static_cast<utf8proc_option_t>(options));
      if (len < 0) {
        return Error{fmt::format("normalization failed: {}", utf8proc_errmsg(len))};
      }
      normalized.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(len));
      std::free(out);
    }
  }
  std::vector<std::string> pieces{std::move(normalized)}, next;
  for (const PreStep& step : pre_steps_) {
    next.clear();
    for (const std::string& p : pieces) {
      Status s = step.split->split(p, &next);
      if (!s) return s;
    }
    pieces.swap(next);
  }
  for (std::string& p : pieces) {
    if (add_prefix_space_ && p.front() != ' ') p.insert(p.begin(), ' ');
    if (byte_level_split_) {
      next.clear();
      Status s = byte_level_split_->split(p, &next);
      if (!s) return s;
      for (const std::string& q : next) model_->encode_piece(q, ids);
    } else {
      model_->encode_piece(p, ids);
    }
  }
  return Status::Ok();
}

Result<std::vector<int32_t>> HfBpeTokenizer::encode(std::string_view text) const {
  if (int64_t bad = invalid_utf8_offset(text); bad >= 0) {
    return Error{
        fmt::format("the text is not valid UTF-8 (byte {}); tokenizers count characters, "
                    "so invalid bytes are refused rather than guessed",
                    bad)};
  }
  std::vector<int32_t> ids;
  size_t seg = 0;  // start of the text not yet encoded
  const auto* u = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    const AddedToken* hit = nullptr;
    if (added_first_[u[i]]) {
      for (const AddedToken& a : added_) {
        if (text.compare(i, a.content.size(), a.content) != 0) continue;
        if (a.single_word) {
          const size_t end = i + a.content.size();
          if ((i > 0 && is_word_byte(u[i - 1])) || (end < text.size() && is_word_byte(u[end]))) {
            continue;
          }
        }
        hit = &a;
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    size_t start = i, end = i + hit->content.size();
    if (hit->lstrip) {
      while (start > seg && is_space(u[start - 1])) --start;
    }
    if (hit->rstrip) {
      while (end < text.size() && is_space(u[end])) ++end;
    }
    Status s = encode_part(text.substr(seg, start - seg), &ids);
    if (!s) return Error{s.error()};
    ids.push_back(hit->id);
    seg = i = end;
  }
  Status s = encode_part(text.substr(seg), &ids);
  if (!s) return Error{s.error()};
  return ids;
}

}  // namespace tokperf
