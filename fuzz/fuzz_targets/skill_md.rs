//! `SKILL.md` files as skill discovery reads them (`iris_skill::discover_skills`:
//! frontmatter split, YAML, field rules, description cap), then `load_skill`'s read of
//! the same file and the catalog text the model sees.
//!
//! Discovery only reads a workspace, so each input is written to
//! `<scratch>/.agents/skills/fuzz-skill/SKILL.md` first.
//!
//! Invariants: discovery of a valid workspace never fails; every diagnostic has a
//! stable code and a message; a listed skill has the directory's name and a non-empty
//! description within the cap, and loads.
#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use iris_fuzz::{check_code, check_error, scratch_dir, write};
use iris_skill::{SkillCatalog, SkillDiscoveryOptions, SkillRegistry, SkillTools, discover_skills};
use libfuzzer_sys::fuzz_target;

const NAME: &str = "fuzz-skill";
const MAX_DESCRIPTION_CHARS: usize = 200;

static WORKSPACE: LazyLock<PathBuf> = LazyLock::new(|| {
    let ws = scratch_dir("skill_md");
    std::fs::create_dir_all(ws.join(".agents/skills").join(NAME))
        .unwrap_or_else(|e| panic!("cannot create the skill folder: {e}"));
    ws
});

fuzz_target!(|data: &[u8]| {
    let file = WORKSPACE.join(".agents/skills").join(NAME).join("SKILL.md");
    write(&file, data);
    let options = SkillDiscoveryOptions::new(WORKSPACE.as_path())
        .with_max_description_chars(MAX_DESCRIPTION_CHARS);
    let found = match discover_skills(&options) {
        Ok(found) => found,
        Err(e) => panic!("discovery failed on a valid workspace: {}: {e}", e.code()),
    };
    for d in &found.diagnostics {
        check_code(d.code.as_str());
        check_error(d.code.as_str(), &d.message);
    }
    assert!(found.skills.len() <= 1);
    let Some(skill) = found.skills.first() else {
        assert!(
            found.diagnostics.iter().any(|d| d.code.skips_skill()),
            "the skill was dropped without a diagnostic that says so: {:?}",
            found.diagnostics
        );
        return;
    };
    assert_eq!(skill.name, NAME);
    let chars = skill.description.chars().count();
    assert!(
        chars > 0 && chars <= MAX_DESCRIPTION_CHARS,
        "description of {chars} chars"
    );
    assert_eq!(skill.description, skill.description.trim_start());

    let registry = SkillRegistry::new(found);
    let _ = SkillCatalog::new(&registry).to_text();
    let tools = SkillTools::new(registry);
    match tools.load(NAME) {
        Ok(loaded) => {
            assert_eq!(loaded.name, NAME);
            let _ = loaded.to_text();
        }
        Err(e) => panic!("a discovered skill does not load: {}: {e}", e.code()),
    }
});
