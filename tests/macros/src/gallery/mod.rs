//! A gallery of realistic tools, one per shape the macro must handle: enums, nested
//! structs, vectors, maps, optional and defaulted parameters, renamed fields, both doc
//! comment styles, presets, context injection, sync and thread execution, `Result` and
//! `ToolOutput` returns, deprecation, aliases, tags, examples and versions, and tools
//! over shared state (`#[tools]` on an impl block).

use iris_tools_core::ToolDefinition;

pub mod config;
pub mod data;
pub mod files;
pub mod inventory;
pub mod legacy;
pub mod text;
pub mod web;

/// Every gallery tool's definition, in a stable order, built without running anything.
pub fn definitions() -> Vec<ToolDefinition> {
    vec![
        config::read_config::definition(),
        config::merge_env::definition(),
        text::word_count::definition(),
        text::slugify::definition(),
        text::tokenize::definition(),
        text::hash_text::definition(),
        text::format_table::definition(),
        text::validate_email::definition(),
        data::search_issues::definition(),
        data::paginate::definition(),
        data::sort_numbers::definition(),
        data::calculate::definition(),
        data::convert_units::definition(),
        data::run_sql_query::definition(),
        data::classify_ticket::definition(),
        data::geocode::definition(),
        files::list_directory::definition(),
        files::write_note::definition(),
        files::session_info::definition(),
        files::clear_cache::definition(),
        web::fetch_forecast::definition(),
        web::github_api_url::definition(),
        web::schedule_meeting::definition(),
        web::http_status_text::definition(),
        web::delegate_task::definition(),
        legacy::legacy_lookup::definition(),
        legacy::old_ping::definition(),
        legacy::countdown::definition(),
        legacy::render_badge::definition(),
        inventory::Inventory::stock_level_definition(),
        inventory::Inventory::reserve_item_definition(),
        inventory::Inventory::count_items_definition(),
        inventory::Inventory::warehouse_report_definition(),
    ]
}
