#include "compat/device_copy.h"

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace studio::compat {

DeviceCopy DeviceCopy::start(const at::Tensor& to, const at::Tensor& from) {
  DeviceCopy c;
  if (!to.is_cuda()) {
    to.copy_(from);
    return c;
  }
  c.device_ = to.device();
  const auto* impl = c10::impl::getDeviceGuardImpl(c.device_.type());
  const c10::Stream side = impl->getStreamFromGlobalPool(c.device_);
  c10::Event ready(c.device_.type());
  ready.record(impl->getStream(c.device_));
  ready.block(side);
  {
    c10::StreamGuard on_side(side);
    to.copy_(from, /*non_blocking=*/true);
  }
  c.done_ = std::make_shared<c10::Event>(c.device_.type());
  c.done_->record(side);
  return c;
}

void DeviceCopy::wait() {
  if (done_) done_->block(c10::impl::getDeviceGuardImpl(device_.type())->getStream(device_));
  done_.reset();
}

}  // namespace studio::compat
