#include "workers/guarded_main.h"

#include <iostream>

#include <c10/util/Exception.h>

#include "plan/error.h"
#include "workers/launch_args.h"

namespace studio::workers {

int guarded_main(const std::string& prefix, const std::function<int()>& body) {
  try {
    return body();
  } catch (const ArgError& e) {
    std::cerr << prefix << e.what() << std::endl;
    return kBadArgument;
  } catch (const Cancelled&) {
    std::cerr << prefix << "cancelled; nothing was written" << std::endl;
    return kCancelled;
  } catch (const InputError& e) {
    std::cerr << prefix << e.what() << std::endl;
    return kBadInput;
  } catch (const c10::Error& e) {
    std::cerr << prefix << "internal error: " << e.what_without_backtrace() << std::endl;
    return kInternal;
  } catch (const std::exception& e) {
    std::cerr << prefix << "internal error: " << e.what() << std::endl;
    return kInternal;
  }
}

}  // namespace studio::workers
