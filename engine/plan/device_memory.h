#pragma once
// What a rank's device holds at its peak, given the memory it has: the one rule for where the text encoders run.

#include "plan/job.h"
#include "plan/parallel.h"

namespace studio::plan {

// The peak of `m` on a device of `memory_gib` (0: unknown). With --text_encoder_device auto the encoders go to the
// CPU when the device lacks the room for them (as the run decides, text/encode/prompt.cpp), so they never make
// a job not fit; with cpu, estimate_memory counts them off the device already.
double device_peak_gib(MemoryEstimate m, const JobSpec& job, double memory_gib);
// Whether --text_encoder_device auto sends the encoders of `m` to the CPU on a device of `memory_gib`.
bool encoder_sent_to_cpu(const MemoryEstimate& m, const JobSpec& job, double memory_gib);

}  // namespace studio::plan
