#pragma once

// The broker's side of the SQL system tables: reads the group coordinator's state for
// SQL threads by running on the event loop, where the coordinator lives.

#include "sql/system_tables.h"

namespace sluice::broker {
class broker;
}

namespace sluice::app {

class sql_state final : public sql::broker_state {
  public:
    explicit sql_state(broker::broker& b) : _b(b) {}
    std::vector<group> groups() override;
    std::vector<committed_offset> group_offsets() override;
    std::map<std::string, std::string> topic_defaults() override;

  private:
    broker::broker& _b;
};

}  // namespace sluice::app
