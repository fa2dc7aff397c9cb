#include "core/error.h"

#include <cstdio>
#include <cstdlib>

namespace torchless {

Error::Error(std::string message, std::string place, std::string details)
    : message_(std::move(message)), place_(std::move(place)), details_(std::move(details)) {
  render();
}

Error& Error::withPlace(const std::string& place) {
  if (place_.empty()) place_ = place;
  render();
  return *this;
}

Error& Error::addContext(std::string line) {
  context_.push_back(std::move(line));
  render();
  return *this;
}

std::string Error::firstLine() const {
  return place_.empty() ? message_ : place_ + ": " + message_;
}

const char* Error::what() const noexcept { return what_.c_str(); }

void Error::render() {
  what_ = firstLine();
  if (!details_.empty()) {
    what_ += "\n";
    what_ += details_;
  }
  for (const auto& c : context_) {
    what_ += "\n  ";
    what_ += c;
  }
}

void internalAssertFail(const char* file, int line, const char* cond, const std::string& msg) {
  std::fprintf(stderr, "torchless internal error at %s:%d: assertion `%s` failed%s%s\n", file, line,
               cond, msg.empty() ? "" : ": ", msg.c_str());
  std::abort();
}

}  // namespace torchless
