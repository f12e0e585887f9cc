#include "gui/results/run_info.h"

#include <QFile>
#include <QDir>
#include <QFileInfo>
#include <QObject>
#include <QStringList>

#include <cmath>
#include <optional>
#include <set>

#include "hub/hashing.h"
#include "plan/family.h"
#include "plan/field_labels.h"
#include "plan/lora_choice.h"
#include "plan/model_folder.h"
#include "plan/run_settings.h"

namespace studio::gui {

QString run_name(qint64 id, const QString& prompt, const QString& settings) {
  constexpr int kShown = 32;
  const QString start = prompt.size() > kShown ? prompt.left(kShown) + QChar(0x2026) : prompt;
  const auto f = job_of(settings);
  return QObject::tr("run %1, \"%2\"%3").arg(id).arg(start, f ? ", " + short_label(f->parallel) : QString());
}

QString short_label(const plan::ParallelConfig& p) {
  QStringList parts;
  if (p.ulysses_degree > 1) parts << QString("U%1").arg(p.ulysses_degree);
  if (p.ring_degree > 1) parts << QString("R%1").arg(p.ring_degree);
  if (p.pipefusion_parallel_degree > 1)
    parts << QString("PF%1x%2").arg(p.pipefusion_parallel_degree).arg(p.num_pipeline_patch);
  if (p.use_cfg_parallel) parts << "CFG";
  if (p.data_parallel_degree > 1) parts << QString("DP%1").arg(p.data_parallel_degree);
  QString label = parts.isEmpty() ? QObject::tr("1 process") : parts.join("x");
  if (p.use_parallel_vae) label += "+VAE";
  return label;
}

QString setting_label(const QString& key) { return QString::fromStdString(plan::field_label(key.toStdString())); }

std::optional<plan::JobFile> job_of(const QString& settings) {
  try {
    return plan::job_file_from_json(settings.toStdString(), "the history's settings", plan::UnknownKeys::Skipped);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool makes_clips(const plan::JobSpec& job) {
  try {
    return plan::rules_of(plan::read_model_folder(job.model_dir)).makes_video();
  } catch (const std::exception&) {
    return true;
  }
}

std::map<std::string, std::string> run_metadata(const plan::JobFile& f) {
  plan::JobSpec job = f.job;
  std::optional<plan::ModelFolder> model;
  try {  // the model's defaults filled in, its family and sampler named, as the worker writes them
    model = plan::read_model_folder(job.model_dir);
    plan::apply_model_defaults(job, *model);
  } catch (const std::exception&) {
    model.reset();  // the folder moved since the run: what the job file says is still written
  }
  auto m = plan::settings_metadata(job, f.parallel);
  m["settings"] = plan::to_json(f);
  m["fps"] = std::to_string(job.fps);
  m["dtype"] = job.dtype;  // as asked; the worker's sidecar below says what it computed in
  if (model) {
    m["model_family"] = model->variant.name;
    m["sampler"] = plan::rules_of(*model).sampler_name(*model);
    if (job.use_fbcache || job.use_teacache || job.use_magcache)
      m["cache_threshold"] = plan::shortest_number(plan::cache_threshold(job, *model));
  }
  if (!std::isnan(job.cache_threshold) && !m.count("cache_threshold"))
    m["cache_threshold"] = plan::shortest_number(job.cache_threshold);
  for (auto [key, value] : {std::pair{"image", &job.image_file}, std::pair{"last_image", &job.last_image_file},
                            std::pair{"lora", &job.lora}, std::pair{"lora_2", &job.lora_2}})
    if (!value->empty()) m[key] = *value;
  // What the worker wrote beside its output is what the run was: the pictures' and LoRAs' sizes and SHA-256 as
  // they were then, and the settings as it ran them. Its own format fields the exported file writes anew.
  const QFileInfo out(QString::fromStdString(job.output_file));
  for (const QString& name : {out.fileName(), out.completeBaseName() + "_1." + out.suffix()}) {
    QFile side(out.dir().filePath(name + ".json"));
    if (job.output_file.empty() || !side.open(QIODevice::ReadOnly)) continue;
    // Numbers as written (a seed past what a double holds stays exact); what is not JSON is skipped.
    // The pictures' paths are the run's copies there: the settings name the files the user chose.
    static const std::set<std::string> format_fields{"encoder", "frames", "fps", "width", "height"};
    const auto written = nlohmann::json::parse(side.readAll().toStdString(), nullptr, false);
    if (!written.is_object()) break;
    for (const auto& [key, value] : written.items())
      if (!format_fields.count(key) && key != "image" && key != "last_image" &&
          (value.is_string() || value.is_number() || value.is_boolean()))
        m[key] = value.is_string()         ? value.get<std::string>()
                 : value.is_number_float() ? plan::shortest_number(value.get<double>())
                                           : value.dump();
    break;
  }
  return m;
}

QStringList changed_loras(const plan::JobFile& then, const plan::JobFile& now) {
  QStringList out;
  auto before = run_metadata(then), after = run_metadata(now);
  for (auto [key, list] : {std::pair{"lora", &now.job.lora}, std::pair{"lora_2", &now.job.lora_2}}) {
    const std::string sha = std::string(key) + "_sha256";
    if (list->empty() || !before.count(sha) || !after.count(sha)) continue;
    const QStringList a = QString::fromStdString(before[sha]).split(','), b = QString::fromStdString(after[sha]).split(',');
    try {
      const auto uses = plan::parse_loras(*list, std::string("--") + key);
      for (size_t i = 0; i < uses.size() && int(i) < a.size() && int(i) < b.size(); ++i)
        if (a[int(i)] != b[int(i)]) out << QString::fromStdString(uses[i].file);
    } catch (const std::exception&) {
      // a list the job's check names
    }
  }
  return out;
}

QString kept_picture(const QString& run_folder, const InputPicture& picture) {
  if (run_folder.isEmpty()) return {};
  const QDir dir(run_folder);
  const QStringList found = dir.entryList({QString(picture.kept), QString(picture.kept) + ".*"}, QDir::Files);
  return found.isEmpty() ? QString() : dir.filePath(found.front());
}

void use_kept_pictures(plan::JobSpec& job, const QString& run_folder, bool exact) {
  for (const auto& picture : kInputPictures) {
    std::string& path = job.*picture.path;
    const QString kept = kept_picture(run_folder, picture);
    if (!path.empty() && !kept.isEmpty() && (exact || !QFileInfo::exists(QString::fromStdString(path))))
      path = kept.toStdString();
  }
}

QString duration_text(double seconds) {
  if (seconds < 60) return QObject::tr("%1 s").arg(seconds, 0, 'f', 1);
  const int s = int(std::lround(seconds));
  if (s < 3600) return QObject::tr("%1 min %2 s").arg(s / 60).arg(s % 60);
  return QObject::tr("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}

}  // namespace studio::gui
