#include "gui/compose/token_count.h"

#include <QCoreApplication>

#include <filesystem>

#include "plan/family.h"
#include "text/tokenize/prompt_clean.h"

namespace studio::gui {

namespace {

QString tr(const char* s) { return QCoreApplication::translate("TokenCount", s); }

struct Part {
  QString encoder;
  size_t used = 0, limit = 0;
};

}  // namespace

void TokenCounter::set_model(const plan::ModelFolder* model) {
  if (model && model_ && model_->dir == model->dir) return;
  model_.reset();
  t5_.reset();
  clip_.reset();
  if (!model || !model->has_tokenizer) return;
  model_ = *model;
  const std::filesystem::path dir(model->dir);
  try {
    t5_ = std::make_shared<text::T5Tokenizer>(text::T5Tokenizer::load((dir / model->t5_tokenizer_part()).string()));
  } catch (const std::exception&) {  // the run says what is wrong with the folder; here nothing is counted
  }
  if (const auto part = plan::rules_of(*model).clip_tokenizer_part(); !part.empty()) try {
      clip_ = text::ClipTokenizer::load((dir / part).string());
    } catch (const std::exception&) {
    }
}

std::optional<TokenCount> TokenCounter::count(const plan::JobSpec& given, const std::string& which) const {
  if (!model_) return std::nullopt;
  plan::JobSpec job = given;
  plan::apply_model_defaults(job, *model_);
  const auto& rules = plan::rules_of(*model_);
  const std::string& words = plan::job_text(job, which);
  const size_t t5_limit = size_t(std::max(1, job.max_sequence_length) - 1);  // the last one is </s>
  std::vector<Part> parts;
  for (const auto& in : rules.encoder_inputs(job)) {
    if (in.field != which) continue;
    if (in.encoder == plan::TextEncoder::CLIP && clip_)
      parts.push_back({"CLIP", clip_->tokenize(words).size(), clip_->model_max_length() - 2});
    if (in.encoder == plan::TextEncoder::T5 && t5_)
      parts.push_back({rules.t5_name(), t5_->tokenize(rules.cleans_prompts() ? text::clean_wan_prompt(words) : words).size(),
                       t5_limit});
  }
  if (parts.empty()) return std::nullopt;
  TokenCount out;
  for (const auto& p : parts) {
    const QString n = tr("%1 / %2 tokens").arg(p.used).arg(p.limit);
    out.text += (out.text.isEmpty() ? "" : " · ") + (parts.size() > 1 ? p.encoder + " " + n : n);
    if (p.used > p.limit) {
      out.cut = true;
      out.warning += (out.warning.isEmpty() ? "" : " ") +
                     tr("%1 reads the first %2 tokens: the last %3 will be ignored.")
                         .arg(p.encoder).arg(p.limit).arg(p.used - p.limit);
    }
  }
  if (out.cut && rules.takes_prompt_2() && which == "prompt" && job.prompt_2.empty())
    out.warning += tr(" Give T5 the whole text as the prompt for T5, and keep this one short.");
  return out;
}

}  // namespace studio::gui
