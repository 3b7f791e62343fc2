// Exhaustive dispatch over a std::variant: std::visit(Overloaded{handler, ...}, v) with one
// handler per alternative and no catch-all (no `auto` parameter), so a variant that gains an
// alternative without a handler does not compile. The alternatives are distinct structs with no
// conversions between them, so each handler matches exactly one.
#pragma once

namespace sedna::core {

template <class... Handlers>
struct Overloaded : Handlers... {
  using Handlers::operator()...;
};
template <class... Handlers>
Overloaded(Handlers...) -> Overloaded<Handlers...>;

}  // namespace sedna::core
