#include "plan/device_memory.h"

namespace studio::plan {

bool encoder_sent_to_cpu(const MemoryEstimate& m, const JobSpec& job, double memory_gib) {
  return memory_gib > 0 && job.text_encoder_device == "auto" && kProcessGiB + m.text_encoder_gib > memory_gib;
}

double device_peak_gib(MemoryEstimate m, const JobSpec& job, double memory_gib) {
  if (encoder_sent_to_cpu(m, job, memory_gib)) m.text_encoder_gib = 0;
  return m.peak_gib();
}

}  // namespace studio::plan
