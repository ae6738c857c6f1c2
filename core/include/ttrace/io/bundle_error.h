#pragma once
// Thrown only for failures after a bundle was opened (a file changed underneath us); opening
// itself reports problems as Diagnostics.
#include <stdexcept>
#include <string>

namespace ttrace {

class BundleError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace ttrace
