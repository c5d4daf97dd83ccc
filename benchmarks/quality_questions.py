"""The questions of the search-quality benchmark (``quality.py``) and their right sessions.

Each question is written the way a person or an agent asks for a past session: in other words
than the transcript (``paraphrase``), as an exact identifier (a function, file, flag, command or
error code: ``identifier``), as a pasted error text (``error``), as a few half-remembered words
(``vague``), as a full sentence (``sentence``) or with a typo (``typo``).

The right sessions of every question were decided by reading the transcripts, not by running a
search: ``why`` says in one line what makes each of them right. A session is right when reading
it answers the question (it did the work, hit the error, or received the subagent's report of
it); a session that only mentions a word of the question (an open editor tab, a file listing)
is not. A question may have several right sessions.

``home`` is the corpus a question was written for: ``examples`` (the bundled examples,
``sessionquery quickstart``) or ``real`` (the real transcripts of ``../shared/corpus/real``, read
through the importers). Right sessions of the other corpus count when that corpus is loaded too
(the benchmark indexes both together when it can).

Invariants: the set is fixed; questions are never reworded or dropped because an engine ranks
them badly (a change to a question or its right sessions is a change to the instrument, made
only after reading the transcripts again, and says why).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["KINDS", "QUESTIONS", "Kind", "Question"]

Kind = Literal["paraphrase", "identifier", "error", "vague", "sentence", "typo"]

KINDS: tuple[Kind, ...] = ("paraphrase", "identifier", "error", "vague", "sentence", "typo")
"""Every kind of question, in the order the report lists them."""


@dataclass(frozen=True, slots=True)
class Question:
    """One question, its kind, the sessions that answer it and why.

    Attributes:
        text: what is typed into the search, verbatim.
        kind: how it is asked (see :data:`KINDS`).
        home: ``examples`` or ``real``: the corpus it was written for.
        answers: the right sessions' ids (as the importers and the store list them).
        why: one short line: what makes each answer right.
    """

    text: str
    kind: Kind
    home: Literal["examples", "real"]
    answers: tuple[str, ...]
    why: str


# The bundled examples (sessionquery.examples).
BR = "billing-rounding"
BRS = "billing-rounding-scan"
BRB = "billing-rounding-bankers"
DDM = "dashboard-dark-mode"
DWS = "dashboard-websocket"

# claude-code-viewer: a Next.js TODO app built by parallel Task subagents (inline sidechains).
TODO = "fe5e1c67-53e7-4862-81ae-d0e013e3270b"
T_STATE = f"{TODO}/sidechain-0d692b0f-17cb-4fd0-94fb-215dabcef803"  # useTodos hook
T_SETUP = f"{TODO}/sidechain-60dade70-20bb-4edb-9dad-9f08267e0cc2"  # create-next-app
T_COMP = f"{TODO}/sidechain-6690d10e-f521-4ac0-800d-e5eb7a2d8072"  # components
T_TYPES = f"{TODO}/sidechain-f4546a51-ea10-47e0-b4e0-76802974f8a9"  # types/
T_PAGE = f"{TODO}/sidechain-f4ab2bf6-d642-431a-85cb-66691f24c404"  # page integration
VIEWER = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"  # /orchestrator: update CLAUDE.md
V_PKG = f"{VIEWER}/sidechain-6340ddef-f656-4b72-a065-82390f637678"  # package.json review
V_STRUCT = f"{VIEWER}/sidechain-83e2917c-8940-4df6-a5a5-f2514f0d08c5"  # structure review
V_AGENT = f"{VIEWER}/agent-test-hash-123"  # agent file: "run the test suite"
INIT = "1af7fc5e-8455-4414-9ccd-011d40f70b2a"  # /init on an empty directory

# agentcmd: Claude Code sessions in one monorepo.
SCROLL = "06381696-0074-49f8-863e-6ad4fac507f9"  # AI Elements scrolling
NAVUSER = "2d984148-cddb-4605-aac1-13e720fe613c"  # user initials in NavUser
PLUS = "8a2518dd-ff41-4d5f-83a1-407b03598cc6"  # + button beside the search
AUDIT = "cfa1e878-62b5-4e40-b281-bbf9b250d766"  # "Hey", codebase audit

# agentcmd: Codex rollouts in one monorepo.
TEAMSHEET = "01997e76-d124-7592-9cac-2ec05abbca08"  # slow TeamSheet refactor
DASHQ = "01997ea4-a70d-7da3-8c20-c736db82a7c5"  # dashboard queries and prefetch
METRICS = "0199812e-64f0-7f73-91fc-095dda01c36e"  # label metrics page plan
PRISMA_PLAN = "01998190-fba6-7f40-9309-dc4e48c5844a"  # supabase -> prisma plan
SERVICES_PRISMA = "019982b8-3422-79e0-8b3b-05abaf4f3c3e"  # @packages/services-prisma

# episodic-memory.
SCENARIO = "9a9eadc8-c1f1-493e-a0f1-884aa996b05b"  # AI scenario-testing agent
STREAM = "0fae0449-64d3-4788-8622-d3a47d82c14b"  # streaming PR, CI, reviews
SUMMARY = "982581eb-41b9-46da-86c1-ac34168117a8"  # summariser call on skill tests
MEDIUM = "medium-conversation"  # only a summary title

# agent-sessions: trimmed schema fixtures.
CODEX_SMALL = "019fc8be-3658-7ca3-9e29-000000000000"
STAGE0 = "ses_stage0_small"
STAGE0_SIDE = "ses_stage0_small/sidechain-sys1"


def _q(
    kind: Kind, home: Literal["examples", "real"], text: str, answers: tuple[str, ...], why: str
) -> Question:
    return Question(text, kind, home, answers, why)


E: Literal["examples"] = "examples"
R: Literal["real"] = "real"

# One question per entry: kind, home corpus, the text typed, its right sessions, why.
# fmt: off
QUESTIONS: tuple[Question, ...] = (
    # ---------------------------------------------------------- the bundled examples
    _q("sentence", E, "where did we fix the failing test",
       (BR, BRB, NAVUSER), "BR fixed the flaky rounding test (BRB forks after that turn); "
       "NAVUSER fixed its failing getInitials test"),
    _q("sentence", E, "what did earlier sessions try for the flaky rounding test?",
       (BR, BRB), "BR: Decimal + ROUND_HALF_UP; BRB carries that turn and tries banker's rounding"),
    _q("paraphrase", E, "invoice total test fails once in ten CI runs because floats were summed "
       "before converting to Decimal",
       (BR, BRB), "the diagnosis of BR's first turn, which BRB inherits"),
    _q("identifier", E, "test_invoice_total_rounding",
       (BR, BRB), "the flaky test, run and fixed in BR's first turn"),
    _q("identifier", E, "ROUND_HALF_EVEN",
       (BRB,), "BRB tries ROUND_HALF_EVEN and reverts it"),
    _q("sentence", E, "did we ever try banker's rounding for invoices?",
       (BRB,), "BRB's own turn: banker's rounding breaks test_matches_finance_export"),
    _q("paraphrase", E, "which other billing code still rounds money with float round()",
       (BR, BRS), "BRS found refunds.py:42 and reports.py:88; BR asked and fixed them"),
    _q("identifier", E, "billing/refunds.py:42",
       (BR, BRS), "found by the BRS scan, reported to and fixed in BR"),
    _q("vague", E, "subagent scan for float rounding",
       (BRS, BR), "BRS is that subagent; BR delegated it"),
    _q("error", E, "AssertionError: assert Decimal('10.01') == Decimal('10.00')",
       (BR, BRB), "the flaky failure reproduced in BR's first turn (inherited by BRB)"),
    _q("paraphrase", E, "remember the user's light or dark theme choice on the settings page",
       (DDM,), "DDM adds a ThemeToggle that stores the choice in localStorage"),
    _q("identifier", E, "ThemeToggle",
       (DDM,), "added to SettingsPage in DDM"),
    _q("identifier", E, "npm test -- settings -u",
       (DDM,), "DDM updates the settings snapshot with it"),
    _q("typo", E, "dark mdoe toggle",
       (DDM,), "DDM: dark mode toggle"),
    _q("identifier", E, "proxy_read_timeout",
       (DWS,), "the nginx setting behind DWS's reconnects"),
    _q("identifier", E, "HEARTBEAT_MS",
       (DWS,), "DWS lowers HEARTBEAT_MS from 45 to 20 seconds"),
    _q("vague", E, "revenue chart keeps reconnecting",
       (DWS,), "DWS's question"),
    _q("sentence", E, "why does the live chart drop its websocket every 30 seconds in production?",
       (DWS,), "DWS: proxy timeout 30 s, heartbeat 45 s"),
    _q("typo", E, "websoket heartbeat interval",
       (DWS,), "DWS changes the websocket heartbeat interval"),
    _q("paraphrase", E, "client pings less often than the proxy's idle cutoff so connections get "
       "dropped",
       (DWS,), "DWS's diagnosis in other words"),
    _q("sentence", E, "which session ran pytest",
       (BR, BRB), "BR and BRB run pytest; no real session does"),
    # ------------------------------------------- the TODO app (claude-code-viewer)
    _q("paraphrase", R, "build a todo app with Next.js by splitting the work into parallel "
       "subtasks",
       (TODO,), "TODO's /orchestrator run decomposes the app into parallel Task subagents"),
    _q("identifier", R, "/orchestrator",
       (TODO, VIEWER), "both sessions start with the /orchestrator command"),
    _q("typo", R, "nextjs todo app orchestrater",
       (TODO, VIEWER), "TODO: /orchestrator create TODO app by Next.js; VIEWER: /orchestrator on "
       "the same app's CLAUDE.md"),
    _q("identifier", R, "create-next-app --no-turbopack",
       (T_SETUP,), "the command that finally worked in T_SETUP"),
    _q("paraphrase", R, "create-next-app kept stopping to ask about the src directory and "
       "Turbopack",
       (T_SETUP,), "T_SETUP fought the interactive prompts with echo/yes pipes"),
    _q("identifier", R, "pnpm add lucide-react",
       (T_SETUP,), "run in T_SETUP"),
    _q("paraphrase", R, "subagent that wrote the todo item, list, add form and filter tab "
       "components",
       (T_COMP, TODO), "T_COMP wrote TodoItem/TodoList/AddTodo/Filter; TODO received its summary"),
    _q("paraphrase", R, "where did we keep todos in localStorage using a reducer hook",
       (T_STATE, TODO), "T_STATE wrote useTodos with useReducer + localStorage; TODO received "
       "its summary"),
    _q("identifier", R, "useSimpleTodos.ts",
       (T_PAGE, V_STRUCT, VIEWER), "T_PAGE created it; V_STRUCT found it and VIEWER documented "
       "it in CLAUDE.md"),
    _q("error", R, "TypeError: generate is not a function",
       (T_PAGE,), "npm run build failed with it in T_PAGE"),
    _q("error", R, "EISDIR: illegal operation on a directory, read",
       (T_PAGE,), "T_PAGE tried to Read a directory"),
    _q("error", R, "error TS2307: Cannot find module '@testing-library/react'",
       (T_STATE,), "tsc failed on useTodos.test.ts in T_STATE"),
    _q("error", R, "File has not been read yet. Read it first before writing to it.",
       (VIEWER, STREAM, T_STATE, T_SETUP, T_TYPES, T_PAGE), "every session whose Edit/Write was "
       "refused so"),
    _q("sentence", R, "which subagent wrote the Todo interface with createdAt and updatedAt "
       "fields?",
       (T_TYPES, TODO), "T_TYPES wrote types/todo.ts; TODO received its summary naming those "
       "fields"),
    _q("paraphrase", R, "the type files landed inside todo-app instead of the project root",
       (T_TYPES, V_STRUCT), "T_TYPES wrote them from the wrong cwd; V_STRUCT reports the "
       "duplicated types/"),
    _q("sentence", R, "why did npm run build fail in the todo app while the dev server worked?",
       (T_PAGE,), "T_PAGE: build fails (generate is not a function), next dev starts"),
    _q("paraphrase", R, "integrate the components into the main page with a header and gradient "
       "background",
       (T_PAGE, TODO), "T_PAGE did it; TODO received its summary"),
    # ---------------------------------------------------- CLAUDE.md update, /init
    _q("paraphrase", R, "bring CLAUDE.md up to date: Next.js 15, React 19 and Tailwind v4",
       (VIEWER, V_PKG, V_STRUCT), "VIEWER edits CLAUDE.md from its two subagents' version "
       "findings"),
    _q("paraphrase", R, "docs said the dev server runs on 3001 but it really uses 3000",
       (V_PKG, VIEWER), "V_PKG found the port mismatch; VIEWER corrected CLAUDE.md"),
    _q("error", R, "InputValidationError: Task failed due to the following issue: The required "
       "parameter `prompt` is missing",
       (VIEWER,), "VIEWER's first Task call had no prompt"),
    _q("vague", R, "components and types duplicated at the root and in todo-app",
       (V_STRUCT, VIEWER), "V_STRUCT's finding, reported to VIEWER"),
    _q("error", R, "lsd: 3: No such file or directory",
       (V_STRUCT,), "V_STRUCT's tree call (aliased to lsd)"),
    _q("vague", R, "update CLAUDE.md in Japanese",
       (VIEWER,), "VIEWER was asked and answered in Japanese"),
    _q("paraphrase", R, "/init on an empty directory where writing CLAUDE.md was not permitted",
       (INIT,), "INIT: empty repo, Write refused for lack of permission"),
    _q("error", R, "Claude requested permissions to write to /path/to/Demo/CLAUDE.md, but you "
       "haven't granted it yet.",
       (INIT,), "INIT's Write result"),
    _q("vague", R, "empty repo setup CLAUDE.md foundation",
       (INIT, TODO), "INIT did it; TODO carries the summary title 'Empty Repo Setup: CLAUDE.md "
       "Foundation Created'"),
    _q("vague", R, "subagent that says it will run the test suite",
       (V_AGENT,), "the agent file: 'Run the test suite' / 'I'll run the test suite for you'"),
    # ------------------------------------------------------ agentcmd, Claude Code
    _q("paraphrase", R, "show the logged-in user's initials in the sidebar avatar instead of a "
       "hardcoded CN",
       (NAVUSER,), "NAVUSER's task"),
    _q("identifier", R, "getInitials",
       (NAVUSER,), "written and tested in NAVUSER"),
    _q("sentence", R, "why did the menu say Guest User when I was logged in as jnarowski?",
       (NAVUSER,), "NAVUSER: the User model has username, not name"),
    _q("error", R, "AssertionError: expected '' to be '??'",
       (NAVUSER,), "NAVUSER's failing vitest run"),
    _q("paraphrase", R, "put the plus button next to the search box instead of inside it",
       (PLUS,), "PLUS moves the + out of the search input"),
    _q("identifier", R, "AppInnerSidebar.tsx",
       (PLUS,), "PLUS's prompt names it"),
    _q("paraphrase", R, "scroll to the bottom automatically when new chat messages arrive, using "
       "the AI Elements components",
       (SCROLL,), "SCROLL evaluates AI Elements Conversation for auto-scroll"),
    _q("identifier", R, "ConversationScrollButton",
       (SCROLL,), "the AI Elements component SCROLL plans to use"),
    _q("identifier", R, "use-stick-to-bottom",
       (SCROLL,), "the hook SCROLL's research recommends"),
    _q("identifier", R, "mcp__happy__change_title",
       (AUDIT,), "AUDIT calls this MCP tool twice"),
    _q("sentence", R, "which session audited the codebase and checked whether the .env files are "
       "committed?",
       (AUDIT,), "AUDIT's audit runs find .env* and git ls-files"),
    _q("identifier", R, "TOOL_OUTCOME_UNKNOWN",
       (SCROLL, AUDIT), "both end with unanswered tool calls, repaired as TOOL_OUTCOME_UNKNOWN"),
    _q("error", R, "The user doesn't want to proceed with this tool use.",
       (PLUS, STREAM, STAGE0_SIDE), "a tool use rejected by the user in each"),
    _q("identifier", R, "ExitPlanMode",
       (SCROLL, PLUS), "both present a plan with ExitPlanMode"),
    # ------------------------------------------------------------ agentcmd, Codex
    _q("paraphrase", R, "moving the data layer from supabase to prisma",
       (PRISMA_PLAN, SERVICES_PRISMA), "PRISMA_PLAN plans the migration; SERVICES_PRISMA designs "
       "its Prisma services package"),
    _q("typo", R, "prisma migraton",
       (PRISMA_PLAN, SERVICES_PRISMA), "the supabase -> prisma migration sessions"),
    _q("sentence", R, "did we plan a phased migration off supabase-js starting with "
       "packages/services?",
       (PRISMA_PLAN,), "PRISMA_PLAN's request and phased plan"),
    _q("identifier", R, "@packages/services-prisma",
       (SERVICES_PRISMA,), "SERVICES_PRISMA's request"),
    _q("paraphrase", R, "type-safe select and where for a prisma drop-in replacement of "
       "createService",
       (SERVICES_PRISMA,), "SERVICES_PRISMA's request in other words"),
    _q("paraphrase", R, "assigning a team lead was very slow because it reloaded every team",
       (TEAMSHEET,), "TEAMSHEET's request"),
    _q("identifier", R, "useTeamWithStats",
       (TEAMSHEET,), "the hook TEAMSHEET writes (others only have it open)"),
    _q("identifier", R, "/api/teams/:id?include=stats",
       (TEAMSHEET,), "the endpoint TEAMSHEET adds"),
    _q("identifier", R, "apps/spectora-labs/src/app/api/teams/[id]/route.ts",
       (TEAMSHEET,), "TEAMSHEET creates it; DASHQ and METRICS only have it open as an editor tab"),
    _q("sentence", R, "why wasn't the team sheet making a network request when it opened?",
       (TEAMSHEET,), "TEAMSHEET: initialTeam hydrates the cache; then the stale initialData bug"),
    _q("identifier", R, "feat/dashboard-refactor",
       (TEAMSHEET,), "the branch TEAMSHEET creates at the end"),
    _q("identifier", R, "pnpm --filter @repo/spectora-labs check-types",
       (TEAMSHEET,), "run in TEAMSHEET"),
    _q("sentence", R, "can codex auto accept all changes for the rest of the session?",
       (TEAMSHEET,), "asked in TEAMSHEET; Codex says it cannot"),
    _q("error", R, "bash: -c: line 0: syntax error near unexpected token `('",
       (TEAMSHEET, DASHQ), "an unquoted (protected) path in a shell call of each"),
    _q("paraphrase", R, "the dashboard loads three dashboard queries plus leads; is the "
       "prefetching necessary?",
       (DASHQ,), "DASHQ's question and answer"),
    _q("identifier", R, "useDashboardPrefetch",
       (DASHQ,), "the hook DASHQ explains"),
    _q("paraphrase", R, "chart label counts this quarter vs last quarter, with AI usage overlaid",
       (METRICS,), "METRICS's request"),
    _q("vague", R, "quality score issue metrics page",
       (METRICS,), "METRICS's request starts 'Quality score'"),
    _q("error", R, "failed in sandbox MacosSeatbelt with execution error: sandbox denied exec "
       "error",
       (METRICS, TEAMSHEET), "sandboxed shell calls failed so in both"),
    _q("typo", R, "isue metrics endpont cursor usage",
       (METRICS,), "METRICS: issue metrics endpoint, AI usage (cursor)"),
    # ------------------------------------------------------------ episodic-memory
    _q("paraphrase", R, "an AI agent that drives the app with screenshots and clicks and judges "
       "whether the UI looks confusing",
       (SCENARIO,), "SCENARIO's visual oracle + computer-use design"),
    _q("identifier", R, "mcr.microsoft.com/playwright:v1.56.0-arm64",
       (SCENARIO,), "the image SCENARIO switches to"),
    _q("error", R, "npm error Exit handler never called!",
       (SCENARIO,), "the container build failure in SCENARIO"),
    _q("vague", R, "apple container instead of docker",
       (SCENARIO,), "SCENARIO's user switches to Apple container"),
    _q("sentence", R, "which agent framework did we pick for model-agnostic agents in October "
       "2025?",
       (SCENARIO,), "SCENARIO picks LangGraph v1.0"),
    _q("typo", R, "langgraph senario testing",
       (SCENARIO,), "SCENARIO: LangGraph scenario-testing agent"),
    _q("sentence", R, "why is this happy locally but failing in ci",
       (STREAM,), "STREAM's user asks exactly this"),
    _q("paraphrase", R, "CI checked out the pull request merge commit and picked up main's lint "
       "errors",
       (STREAM,), "STREAM's diagnosis of pull/15/merge"),
    _q("identifier", R, "no-build-artifacts",
       (STREAM,), "the lefthook check STREAM edits"),
    _q("identifier", R, "npm run audit:unused",
       (STREAM,), "the knip CI step failing in STREAM"),
    _q("error", R, "lint/suspicious/noImplicitAnyLet",
       (STREAM,), "biome errors in STREAM's CI log"),
    _q("paraphrase", R, "SSE parsing broke when an event was split across two chunks",
       (STREAM,), "STREAM's review: parse by event blocks across chunk boundaries"),
    _q("error", R, "[CLIENT ERROR] Streaming error: {}",
       (STREAM,), "the dev-server log STREAM's user pastes"),
    _q("vague", R, "chat showed [object][object] instead of tokens",
       (STREAM,), "STREAM's streaming display bug"),
    _q("paraphrase", R, "biome kept reformatting the generated Prisma client files",
       (STREAM,), "STREAM: biome formats node_modules/@prisma files"),
    _q("identifier", R, "--no-verify",
       (STREAM,), "STREAM commits with --no-verify to get past the hooks"),
    _q("paraphrase", R, "asked to summarise a conversation concluding that a "
       "prerequisites-checking skill is redundant",
       (SUMMARY,), "SUMMARY's prompt holds that conversation"),
    _q("vague", R, "baseline test: 4 hours into a file upload on local disk",
       (SUMMARY,), "one of the baseline scenarios in SUMMARY's prompt"),
    _q("vague", R, "web app authentication and state management debugging",
       (MEDIUM,), "MEDIUM's only text is that summary title"),
    # ---------------------------------------------------- agent-sessions fixtures
    _q("vague", R, "listed the files and found a.txt and b.txt",
       (CODEX_SMALL, STAGE0), "both fixtures list a.txt and b.txt"),
)
# fmt: on
"""Every question of the benchmark, in the order the report lists them."""
