"""Records and a summary built from them, for the offline model's structured answer (docs/api.md "Records").

The offline model answers `{"summary", "operations"}` (contracts/records.ANSWER_SCHEMA) with rules, not
a model, from the fenced RECORDS, NEW_CONTENT, USER_NAME and OLD_MEMORY blocks of the prompt:

- Statements. A sentence a speaker says about themselves ("I …", "My …", "My wife and I …", "We …")
  that a rule of one category recognises becomes one record: one sentence in the third person that
  names its subject. The subject is the speaker's label (`Caroline: I moved to Berlin.` → "Caroline
  moved to Berlin."); under the `User` label or none, the USER_NAME block, else "The user". The
  speaker's other pronouns become "they"/"their" ("Caroline loves their kids."), "we" becomes
  "<name> and others". Assistant lines, questions, greetings, thanks and small talk are never
  records; neither is a sentence no rule recognises: a stand-in should miss a fact rather than
  invent one. A sentence about the user in the third person ("Alice lives in Berlin." when the user
  is Alice) is read too.
- Dates. Relative dates are made absolute against the item's `Item date:` line, as in the plain-text
  merge (`relative_dates.py`); the date a sentence names is its `valid_from` (null: the item's date),
  and a date after the item's makes the statement a plan.
- Subject keys. A newer statement invalidates the current records with its subject key, the newer
  statement as their replacement; nothing else. The key is the person (the user, whatever name or
  "The user" says it, or another speaker) plus a slot:
  single slots, one current record each: where they live (live in, moved to, based in) and where they
  come from (from, grew up in); their job (work at/as, "I'm a <job>", got a job, quit, retired) and
  their studies; a business by its kind ("my bakery"); each identity attribute (name, age, gender,
  orientation, nationality, "I am <vegan>", "I am a <noun>" by noun); relationship status (married,
  dating, single); a favourite by what it is a favourite of ("my favourite colour"); a plan to move,
  retire, quit or marry.
  Object slots, one current record per object noun phrase: preferences (likes, loves, hates, prefers,
  uses, plays …: "I now prefer tea over coffee" names tea and coffee, so it supersedes "I prefer
  coffee" and not "I like hiking"), possessions (has, owns, bought; sold and lost too, which
  supersede them), other plans (by verb and object), relatives ("I have a younger brother"), projects.
  What is said of a relative, a pet or a belonging is keyed by its relation word or noun (and a name
  given after it) plus the slot of the rest ("My sister lives in Rome" → sister + where she lives).
  Events are never superseded.
- Repeats. A statement whose content words (stemmed, articles and adverbs aside) equal a current
  record's, or that says the same object in the same slot with the same polarity ("moved to Berlin"
  against "lives in Berlin"), is not added again; its item joins the sources of a record this answer
  adds.
- Limits. Record text is cut to MAX_RECORD_CHARS; past MAX_RECORD_OPERATIONS, the invalidations and
  then the adds of the most durable categories (newest first) are kept.
- Summary. The current records after the operations, by category (RECORD_CATEGORIES order) then
  newest first (`since` / `valid_from`, else the item's date; a tie in the order said), whole records
  within the word budget, skipping one that does not fit (the first cut to the budget when none
  fits). Without records listed: with no operations either, the old memory as it is (NOTHING_TO_KEEP
  when empty); with an old summary (a memory that predates records), the plain-text sentence merge of
  it and the new content, which is all there is of that memory.

Everything is regular expressions and string work, linear in the content and the records.
"""

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Final

from hippocampus.adapters.llm.offline_text import (
    SPEAKER,
    extract_blocks,
    fenced_block,
    is_item_header,
    is_small_talk,
    split_sentences,
)
from hippocampus.adapters.llm.relative_dates import (
    LEADING_DATE,
    parse_item_date,
    resolve_relative_dates,
    sentence_sense,
)
from hippocampus.contracts.prompt_format import (
    ASSISTANT_LABEL,
    ITEM_DATE_LABEL,
    ITEM_ID_LABEL,
    ITEM_SEPARATOR,
    MONTHS,
    NOTHING_TO_KEEP,
    RECORD_FIELD_SEPARATOR,
    RECORDS_BEGIN,
    RECORDS_END,
    USER_LABEL,
    USER_NAME_BEGIN,
    USER_NAME_END,
    count_words,
)
from hippocampus.contracts.records import MAX_RECORD_CHARS, MAX_RECORD_OPERATIONS, RECORD_CATEGORIES

# The person key of the user, however a record names them ("The user", their name, `User`).
USER: Final = ""
_THE_USER: Final = "The user"


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that carry no content: left out of object keys and repeat signatures.
_STOP = _words(
    """a an the their them they theirs themselves his her hers its it it's my our your to of in on at
    for from with by and or but so as that this these those there here is are was were be been being
    am has have had do does did will would can could should shall may might must not no than then too
    very just now also really some any all every each own more most much many lot lots bit about into
    onto over up out off again once while what which who whom whose when where why how i me we us
    others other one"""
)
# Adjectives that leave the object the same: "a new car" is the car they sell later.
_PLAIN_ADJECTIVES = _words("new old brand used first second little big small own whole")
_NUMBERS = _words("two three four five six seven eight nine ten twenty dozen few couple several")
# Adverbs that do not change what a statement is about: "I now prefer tea" is "I prefer tea".
_ADVERBS = _words(
    """now just really also still currently already always usually often sometimes mostly generally
    literally seriously honestly basically truly officially newly pretty kinda even lately nowadays
    probably certainly especially originally happily proudly super very too actually finally recently
    absolutely totally definitely anymore ever so"""
)
# Heads that make an object small talk, not a fact: "I had a great time", "I have a question".
_NOISE_HEADS = _words(
    """time blast day days week weekend night evening morning fun moment moments chat talk conversation
    conversations feeling feelings idea ideas thought thoughts question questions chance look bit lot
    good great nice amazing wonderful fantastic awesome rough tough hard busy crazy long lovely best
    such way clue problem point sense reason story stories advice tip tips words message
    suggestion reminder kindness help update news pleasure honor honour luck same something anything
    everything nothing thing things stuff kind sort experience thinking wondering meaning feeling trying
    looking hoping waiting away"""
)
# Verbs whose plans are conversation, not intentions: "I'd love to hear more", "I'll let you know".
_PLAN_NOISE = _words(
    """thank hear know say tell ask share talk chat mention let check catch remind apologize apologise
    congratulate wish see do try keep give send think look make sure add be get go"""
)
_PLAN_GO = re.compile(r"^(?:go|get|be|make) (?:to|a|an|the|back|on|into|for|more|better)\b")
# Past verbs that report the conversation or a feeling, not an event.
_EVENT_NOISE = _words(
    """thought felt said told asked wanted needed hoped wished wondered guessed supposed meant heard
    noticed realized realised knew forgot remembered appreciated agreed mentioned loved liked hated
    enjoyed missed used was were did got decided seemed looked happened figured worried checked
    replied answered texted messaged forgot imagined believed expected understood saw"""
)
_IRREGULAR_PAST = _words(
    """went saw met bought came made took ran ate left found gave told said began wrote flew drove spent
    sold paid lost won felt heard kept sent built broke chose forgot thought brought caught taught
    fell slept became held rode swam sang drew grew threw wore woke got did had knew led read put quit
    set cut hit let shut hurt spread upset bet split beat sat stood fought sought bought dealt dug fed
    hung lent lit meant shot shook spoke stole stuck struck swept swung tore wept wound"""
)
_PARTICIPLES = _words(
    "been done seen gone run taken made met won read written given eaten flown driven begun"
)
_NOT_PAST = _words("need speed succeed proceed exceed indeed breed embed hundred bed red shed seed feed weed")
# First-person present verbs that stay as they are in the third person (modals, past forms).
_INVARIANT = _words(
    """can could would should will shall may might must can't couldn't wouldn't shouldn't won't didn't
    wasn't was did had used ought cannot"""
)
_THIRD_PERSON = {
    "am": "is",
    "have": "has",
    "do": "does",
    "don't": "doesn't",
    "haven't": "hasn't",
    "are": "is",
    "aren't": "isn't",
    "were": "was",
    "weren't": "wasn't",
    "go": "goes",
}
# Verbs with the same present and past form: conjugated only in a sentence that is not about the past.
_SAME_PAST = _words("quit put cut hit set read let shut hurt spread upset bet split beat cost")

_NATIONALITIES = (
    "american|british|english|scottish|welsh|irish|canadian|australian|new zealander|french|german|italian|"
    "spanish|portuguese|dutch|belgian|swiss|austrian|swedish|norwegian|danish|finnish|icelandic|polish|"
    "czech|slovak|hungarian|romanian|bulgarian|greek|turkish|russian|ukrainian|serbian|croatian|bosnian|"
    "albanian|israeli|lebanese|syrian|iranian|iraqi|egyptian|moroccan|algerian|tunisian|nigerian|"
    "ghanaian|kenyan|ethiopian|somali|south african|indian|pakistani|bangladeshi|sri lankan|nepali|"
    "chinese|japanese|korean|vietnamese|thai|filipino|filipina|indonesian|malaysian|singaporean|mexican|"
    "brazilian|argentinian|argentine|chilean|colombian|peruvian|venezuelan|cuban|puerto rican|dominican|"
    "jamaican|haitian"
)
_JOBS = (
    "engineer|developer|programmer|teacher|nurse|doctor|physician|surgeon|lawyer|attorney|designer|manager|"
    "consultant|accountant|architect|scientist|researcher|professor|lecturer|chef|cook|baker|writer|"
    "author|journalist|editor|artist|painter|illustrator|musician|photographer|pharmacist|dentist|"
    "therapist|counselor|counsellor|psychologist|psychiatrist|social worker|analyst|entrepreneur|founder|"
    "freelancer|mechanic|electrician|plumber|carpenter|pilot|driver|firefighter|police officer|officer|"
    "soldier|farmer|barista|bartender|waiter|waitress|cashier|salesperson|librarian|actor|actress|dancer|"
    "singer|coach|trainer|intern|ceo|cto|cfo|director|secretary|clerk|technician|veterinarian|vet|"
    "banker|trader|investor|realtor|paramedic|midwife|caregiver|nanny|tutor|"
    "data scientist|product manager|software engineer|web developer|civil servant|volunteer|"
    "administrator|admin|specialist|coordinator|assistant|receptionist|cleaner|janitor|guard|"
    "tailor|translator|interpreter|economist|biologist|chemist|physicist|mathematician|statistician"
)
_RELATIONS = {
    "wife": "spouse",
    "husband": "spouse",
    "spouse": "spouse",
    "partner": "partner",
    "boyfriend": "partner",
    "girlfriend": "partner",
    "fiance": "partner",
    "fiancé": "partner",
    "fiancee": "partner",
    "fiancée": "partner",
    "kids": "children",
    "kid": "children",
    "children": "children",
    "child": "children",
    "son": "son",
    "sons": "son",
    "daughter": "daughter",
    "daughters": "daughter",
    "baby": "baby",
    "twins": "twins",
    "sister": "sister",
    "sisters": "sister",
    "brother": "brother",
    "brothers": "brother",
    "siblings": "siblings",
    "sibling": "siblings",
    "mom": "mother",
    "mum": "mother",
    "mother": "mother",
    "mommy": "mother",
    "dad": "father",
    "father": "father",
    "daddy": "father",
    "parents": "parents",
    "grandma": "grandmother",
    "grandmother": "grandmother",
    "granny": "grandmother",
    "grandpa": "grandfather",
    "grandfather": "grandfather",
    "grandparents": "grandparents",
    "grandkids": "grandchildren",
    "grandchildren": "grandchildren",
    "aunt": "aunt",
    "uncle": "uncle",
    "cousin": "cousin",
    "cousins": "cousin",
    "niece": "niece",
    "nephew": "nephew",
    "friend": "friend",
    "friends": "friend",
    "bff": "friend",
    "colleague": "colleague",
    "colleagues": "colleague",
    "coworker": "colleague",
    "coworkers": "colleague",
    "roommate": "roommate",
    "flatmate": "roommate",
    "neighbor": "neighbour",
    "neighbour": "neighbour",
    "neighbors": "neighbour",
    "neighbours": "neighbour",
    "family": "family",
    "in-laws": "in-laws",
    "stepson": "stepson",
    "stepdaughter": "stepdaughter",
    "mentor": "mentor",
}
_PETS = _words(
    "dog dogs cat cats puppy kitten pet pets horse bird parrot hamster rabbit bunny turtle fish snake"
)
_BELONGINGS = _words(
    """car bike bicycle house home apartment flat condo phone laptop computer camera guitar piano boat
    truck motorcycle garden collection tattoo"""
)
_WORK_NOUNS = (
    "job|work|company|business|startup|boss|employer|team|manager|office|career|shop|store|clients|"
    "customers|salary|income|role|position|title|team lead|workplace"
)
_PREPOSITIONS = (
    r"in|to|into|near|at|from|outside|inside|close to|with|abroad|here|there|downtown|alone|by|across"
)
# An optional negation, kept: "I don't live in Paris anymore" replaces "… lives in Paris".
_NEG = r"(?P<neg>(?:doesn't|don't|does not|do not|no longer|not|never|hasn't|haven't) )?"
_SKIP_BEFORE_VERB = _ADVERBS | _words("never no longer not")

_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})
_YOU = re.compile(r"\byou(?:r|rs|rself|'re|'ve|'ll|'d)?\b")
# Where an object's noun phrase ends: punctuation, a conjunction, a preposition, a date.
_BOUNDARY = re.compile(
    r"[,.;:!?()\"]| (?:because|since|but|and|or|so|when|while|after|before|until|for|with|on|at|from|"
    r"during|as|which|that|who|where|if|though|although|last|next|every|in|by|these days|right now|"
    r"all the time|a lot|like|of)\b"
)
_COMPARISON = re.compile(r"\b(?:over|rather than|instead of|more than|than|versus|vs)\b")
_MONTH = "|".join(MONTHS)
# A date as `resolve_relative_dates` writes it (or the user does): "7 May 2023", "April 2023", "in 2022".
_NAMED_DATE = re.compile(
    rf"\b(?:(?P<day>\d{{1,2}}) (?P<month>{_MONTH}) (?P<year>\d{{4}})|(?P<month2>{_MONTH}) (?P<year2>\d{{4}})"
    r"|(?:in|since|from|during) (?P<year3>(?:19|20)\d{2})\b)"
)
# Where a sentence holds a second statement: "…, and I …", "…; …", "My name is Alice, I sell …".
_CLAUSE = re.compile(
    r"(?:,\s*|;\s*|\s+)(?:and|but|so|plus)\s+(?=(?:I|I'm|I've|I'll|I'd|my|My|we|We)\b)|;\s+"
    r"|,\s+(?=(?:I|I'm|I've|I'll|I'd)\s)"
)
_VOCATIVE = re.compile(r"^[A-Z][a-z]+, (?=(?:I|I'm|I've|I'll|I'd|My|We)\b)")
_MORE_FILLER = re.compile(
    r"^(?:(?:so|well|wow|omg|um|uh|ah|oh|hmm|haha|lol|plus|but|and|also|anyway|honestly|guess what|"
    r"fun fact|you know what|true|right|exactly|indeed|absolutely|definitely|totally|yep|nope|no|yes|"
    r"yeah|actually|btw|by the way|big news|good news|great news|news|update|these days|nowadays|"
    r"lately|currently|at the moment)(?=[\s,!.;:-])[\s,!.;:-]*)+",
    re.IGNORECASE,
)
_CALL_ME = re.compile(r"^(?:[Pp]lease )?[Cc]all me ([A-Z][\w'-]*)")
_I_AM_NAME = re.compile(r"^I(?:'m| am) ([A-Z][a-z]+)[.!]?$")
_AS_A = re.compile(r"^As an? ([^,]{2,40}), ((?:I|I'm|I've|I'll|I'd|My|We)\b.+)$")
_FIRST_PERSON = re.compile(
    r"^(?:(?P<pair>my (?P<other>[\w-]+(?: [\w-]+)?) and I)\b|(?P<we>we)(?P<wec>'re|'ve|'ll|'d)?\b"
    r"|(?P<my>my)\b|(?P<i>I)(?P<ic>'m|'ve|'ll|'d)?\b)\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_PRONOUN = re.compile(
    r"\b(?:I am|I was|I'm|I've|I'll|I'd|I|me|my|My|mine|myself|we're|we've|we'll|we'd|we|us|our|Our|ours|"
    r"ourselves)\b"
)
_PRONOUN_SWAP = {
    "I am": "they are",
    "I was": "they were",
    "I'm": "they're",
    "I've": "they've",
    "I'll": "they'll",
    "I'd": "they'd",
    "I": "they",
    "me": "them",
    "my": "their",
    "My": "Their",
    "mine": "theirs",
    "myself": "themselves",
    "we're": "they're",
    "we've": "they've",
    "we'll": "they'll",
    "we'd": "they'd",
    "we": "they",
    "us": "them",
    "our": "their",
    "Our": "Their",
    "ours": "theirs",
    "ourselves": "themselves",
}
_CONTRACTIONS = (
    (re.compile(r"\bdoes not\b"), "doesn't"),
    (re.compile(r"\bdo not\b"), "don't"),
    (re.compile(r"\bisn't\b"), "is not"),
    (re.compile(r"\baren't\b"), "are not"),
    (re.compile(r"\bcannot\b"), "can't"),
    (re.compile(r"\bgonna\b"), "going to"),
    (re.compile(r"\bwanna\b"), "want to"),
)
_ADVERB_RUN = re.compile(r"\b(?:" + "|".join(sorted(_ADVERBS)) + r")\b ?")
_NAME_LABEL = re.compile(r"[A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}")
# Labels of free text that are not people ("Note: …", "Update: …", a to-do list's "Todo: …"),
# compared in lower case.
_NOT_NAMES = _words(
    """note notes update edit ps p.s todo reminder important summary question answer q a re subject
    date time location address phone email tip warning error fact facts context status result output
    input example source title name task goal plan tags bio profile preferences item"""
)


@dataclass(frozen=True)
class Fact:
    """What a statement says: its category and the slot a newer statement about the same supersedes.

    `slot` None: never superseded (events). `by_object`: the slot holds one record per object noun
    phrase (`objects`), and a statement supersedes only those sharing one; otherwise one per slot."""

    category: str
    slot: tuple[str, ...] | None
    objects: frozenset[str] = frozenset()
    by_object: bool = False
    negative: bool = False

    def keyed(self, prefix: tuple[str, ...], category: str | None = None) -> "Fact":
        slot = (*prefix, *self.slot) if self.slot is not None else None
        return Fact(category or self.category, slot, self.objects, self.by_object, self.negative)


# A rule that recognises the statement but finds nothing worth keeping ("I'd love to hear more").
_DROP: Final = Fact("", None)
# A durable sentence no rule classifies: a record of its own, never superseded.
_OTHER: Final = Fact("other", None)
_Builder = Callable[[re.Match[str]], Fact | None]


@dataclass(frozen=True)
class CurrentRecord:
    """A record the prompt lists: `rec_… | location | since Monday 8 May 2023 | Caroline lives in Paris.`"""

    record_id: str
    category: str
    since: date | None
    text: str


@dataclass(frozen=True)
class Statement:
    """A durable statement of the new content, ready to become a record."""

    text: str
    fact: Fact  # its slot starts with the person key
    valid_from: date | None  # the date the sentence names; None: the item's date
    day: date | None  # the item's date
    item_id: str | None


@dataclass(eq=False)
class Operation:
    """One operation of the answer; `day` (the item's date) orders the summary and is never sent."""

    op: str
    record_id: str | None
    text: str | None = None
    category: str | None = None
    valid_from: date | None = None
    source_items: list[str] = field(default_factory=list)
    day: date | None = None
    # An invalidation of a record this same answer adds (`new:N`): a backfill's burst says both.
    target: "Operation | None" = None

    def replace_with(self, statement: Statement | None) -> None:
        self.text = statement.text if statement else None
        self.category = statement.fact.category if statement else None
        self.valid_from = statement.valid_from if statement else None
        self.day = statement.day if statement else None
        self.source_items = [statement.item_id] if statement and statement.item_id else []

    def as_json(self, answer: Sequence["Operation"]) -> dict[str, Any]:
        """The operation as the schema writes it; a target of this answer named `new:N` (1-based)."""
        record_id = self.record_id
        op = self.op
        if self.target is not None:
            if self.target in answer:
                record_id = f"new:{answer.index(self.target) + 1}"
            else:  # the record it ends was left out (the operations' limit): what replaces it is new
                op, record_id = ("add", None) if self.text else ("skip", None)
        return {
            "op": op,
            "record_id": record_id,
            "text": self.text,
            "category": self.category,
            "valid_from": self.valid_from.isoformat() if self.valid_from else None,
            "source_items": list(self.source_items),
        }


def structured_answer(prompt: str, max_words: int, merge: Callable[[str, str], str]) -> dict[str, Any]:
    """The answer to a rendered prompt: `{"summary", "operations"}`. `merge`: the plain-text merge of
    (old memory, new content), the summary of a memory that predates records."""
    old_memory, new_content = extract_blocks(prompt)
    user_name = (fenced_block(prompt, USER_NAME_BEGIN, USER_NAME_END) or "").strip() or None
    records = parse_records(fenced_block(prompt, RECORDS_BEGIN, RECORDS_END) or "")
    operations = plan_operations(records, extract_statements(new_content, user_name), user_name)
    if not records and not operations:
        summary = old_memory.strip()  # nothing changed
    elif not records and old_memory.strip():
        # A summary without records (the memory predates them) is all there is of the memory: merge
        # into it as before records.
        summary = merge(old_memory, new_content)
    else:
        summary = summary_from_records(current_records(records, operations), max_words)
        summary = summary or merge(old_memory, new_content)  # every record invalidated
    # An empty answer would be a malfunction (docs/architecture.md "Condensation").
    return {
        "summary": summary or NOTHING_TO_KEEP,
        "operations": [
            body for operation in operations if (body := operation.as_json(operations))["op"] != "skip"
        ],
    }


# --- The records of the prompt ---------------------------------------------------------------------


def parse_records(block: str) -> list[CurrentRecord]:
    """The RECORDS block's lines (`prompt_format.record_line`); a line of another form is skipped."""
    records: list[CurrentRecord] = []
    for line in block.splitlines():
        parts = [part.strip() for part in line.split(RECORD_FIELD_SEPARATOR, 3)]
        if len(parts) != 4 or not parts[0] or not parts[3]:
            continue
        record_id, category, since, text = parts
        category = category if category in RECORD_CATEGORIES else "other"
        records.append(CurrentRecord(record_id, category, named_date(since), text))
    return records


def named_date(text: str) -> date | None:
    """The first date a text names ("Monday 8 May 2023", "April 2023", "in 2022", "2023-05-08")."""
    iso = re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", text)
    match = _NAMED_DATE.search(text)
    try:
        if iso and (match is None or iso.start() < match.start()):
            return date(int(iso[1]), int(iso[2]), int(iso[3]))
        if match is None:
            return None
        if match["year"]:
            return date(int(match["year"]), MONTHS.index(match["month"]) + 1, int(match["day"]))
        if match["year2"]:
            return date(int(match["year2"]), MONTHS.index(match["month2"]) + 1, 1)
        return date(int(match["year3"]), 1, 1)
    except ValueError:  # 31 February
        return None


# --- Statements of the new content -----------------------------------------------------------------


@dataclass
class _Item:
    day: date | None
    item_id: str | None
    lines: list[str] = field(default_factory=list)


def _items(content: str) -> list[_Item]:
    """The new items: a block that starts with neither an `Item date:` nor an `Item id:` line is the
    next paragraph of the item before (the separator is a blank line, which an item may hold)."""
    items: list[_Item] = []
    for block in content.split(ITEM_SEPARATOR):
        lines = block.strip("\n").splitlines()
        first = lines[0] if lines else ""
        if first.startswith(ITEM_DATE_LABEL):
            moment = parse_item_date(first)
            items.append(_Item(moment.date() if moment else None, None))
        elif first.startswith(ITEM_ID_LABEL) or not items:
            items.append(_Item(None, None))
        item = items[-1]
        for line in lines:
            if line.startswith(ITEM_ID_LABEL) and item.item_id is None:
                item.item_id = line[len(ITEM_ID_LABEL) :].strip() or None
            if not is_item_header(line):
                item.lines.append(line)
    return items


def extract_statements(content: str, user_name: str | None) -> list[Statement]:
    """The durable statements of the new content, oldest first, each in the third person."""
    statements: list[Statement] = []
    for item in _items(content):
        is_dialogue = any(line.startswith(f"{ASSISTANT_LABEL}:") for line in item.lines)
        speaker: str | None = None
        in_code = False
        for raw in item.lines:
            line = raw.strip()
            if line.startswith("```"):
                in_code = not in_code
                continue
            if in_code or not line:
                continue
            match = SPEAKER.match(line)
            if match and (is_dialogue or _is_name_label(match.group(1))):
                speaker, line = match.group(1).strip(), match.group(2)
            if speaker == ASSISTANT_LABEL:
                continue  # never the user's statement
            if item.day is not None:
                line = resolve_relative_dates(line, item.day)
            display, person = _speaker(speaker, user_name)
            for sentence in _statement_sentences(line):
                statement = _statement(sentence, display, person, user_name, item)
                if statement is not None:
                    statements.append(statement)
    return statements


def _is_name_label(label: str) -> bool:
    label = label.strip()
    return label in (USER_LABEL, ASSISTANT_LABEL) or (
        _NAME_LABEL.fullmatch(label) is not None and label.split()[0].lower() not in _NOT_NAMES
    )


def _speaker(label: str | None, user_name: str | None) -> tuple[str, str]:
    """(how a record names the speaker, their person key)."""
    if label is None or label == USER_LABEL or (user_name and label.lower() == user_name.lower()):
        return user_name or _THE_USER, USER
    return label, label.lower()


def _person_key(subject: str, user_name: str | None) -> str:
    lower = subject.lower()
    if lower in ("the user", "user", "this user") or (user_name and lower == user_name.lower()):
        return USER
    return lower


def _statement_sentences(line: str) -> Iterable[str]:
    """The line's sentences, small talk out, compound ones cut at "…, and I …"."""
    for sentence in split_sentences(line.translate(_APOSTROPHES)):
        if is_small_talk(sentence):
            continue
        sentence = _sentence_case(_VOCATIVE.sub("", _MORE_FILLER.sub("", sentence)))
        if not sentence:
            continue
        as_a = _AS_A.match(sentence)
        if as_a:  # "As a trans woman, I …": who they are, then what they say
            yield f"I am a {as_a[1]}."
            sentence = as_a[2]
        start = 0
        for cut in _CLAUSE.finditer(sentence):
            left = sentence[start : cut.start()]
            # "My wife and I moved": the subject, not a clause.
            if len(left.split()) >= 2 and not re.fullmatch(r"(?i)my [\w-]+(?: [\w-]+)?", left.strip()):
                yield _sentence_case(left)
                start = cut.end()
        yield _sentence_case(sentence[start:])


def _sentence_case(text: str) -> str:
    text = text.strip().rstrip(",;")
    if not text:
        return ""
    if text[-1] not in ".!?…":
        text += "."
    return text[0].upper() + text[1:]


def _statement(
    sentence: str, display: str, person: str, user_name: str | None, item: _Item
) -> Statement | None:
    if not sentence or sentence.endswith("?"):
        return None
    sentence = _CALL_ME.sub(r"My name is \1", sentence)
    name = _I_AM_NAME.match(sentence)
    if (
        name
        and name[1].lower() not in _SMALL_ADJECTIVES
        and not re.fullmatch(_NATIONALITIES, name[1].lower())
    ):
        sentence = f"My name is {name[1]}."
    sentence = _date_last(sentence)
    when = named_date(sentence)
    later = when is not None and item.day is not None and when > item.day
    past = (when is not None and item.day is not None and when < item.day) or sentence_sense(sentence) < 0
    converted = _third_person(sentence, past)
    fact: Fact | None
    if converted is not None:
        lead, rest = converted
        form = _classifiable(lead, rest)
        fact = classify(form)
        if fact is None and later:
            fact = _future(form)  # "I fly to Lisbon on Friday 12 May 2023"
        # "My name is Alice" under the name Alice: "The user's name is Alice.", not "Alice's name is …".
        named = fact is not None and fact.category == "identity" and fact.slot == ("name",)
        if named and person != USER and display.lower() in rest.lower():
            return None  # "Sam: I'm Sam": the label says it already, "Sam's name is Sam" says nothing
        text = f"{_THE_USER if named and person == USER else display}{lead} {rest}"
    else:
        # "Alice lives in Berlin." about the user Alice (an observation in the third person).
        read = read_third_person(sentence, user_name, require_subject=True)
        if read is not None and read[0] == USER:
            person, fact = read
        else:
            fact = None
        text = sentence
    if fact is _DROP:
        return None
    if fact is None or not fact.category:
        # No rule knows it, yet it reads as a plain statement ("Alice sells candles.", "Prefers dark
        # mode.", a note an application writes): kept as said, under `other`, superseding nothing.
        if not _plain_statement(text, said_by_someone=converted is not None):
            return None
        fact = _OTHER
    if later and fact.category != "identity":
        fact = _plan_fact(fact)  # not done yet: a plan
    # A plan holds from when it is said, not from when it happens; other dates are when it became true.
    valid_from = when if when is not None and not later and fact.category != "plan" else None
    return Statement(_record_text(text), fact.keyed((person,)), valid_from, item.day, item.item_id)


# How a sentence that is chatter, not a statement about someone, begins: pointing, exclaiming,
# telling to do, or a pronoun whose person the record would not name.
_NOT_STATEMENTS = _words(
    """it it's its that that's this these those there there's here here's what how wow oh ah aw
    take look let let's check see imagine guess thank thanks congrats congratulations good great
    they they're he he's she she's we we're everyone everybody someone somebody nobody people both
    all some many most such so"""
)
# What is left first-person after the conversion: a sentence not about a named person.
_STILL_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|us|our|ours)\b")
# "<Name> is so grateful.": how someone feels at the moment, not a lasting fact.
_A_FEELING = re.compile(
    r"^[\w' -]+? (?:is|was|are|were|feels?|felt) (?:(?:so|really|very|super|just|totally|also|still|"
    r"truly|pretty|kinda|extra) )*(?:glad|happy|excited|grateful|thankful|proud|sorry|sure|thrilled|"
    r"stoked|blessed|lucky|amazed|inspired|touched|moved|impressed|curious|eager|pumped|honou?red|"
    r"relieved|okay|ok|fine|good|great|busy|tired|psyched|delighted|overjoyed|glad)\b"
)


_LABEL = re.compile(r"^[^:]{1,40}: ")
_IRREGULAR_VERBS = _words(
    "is was has had does did can will would could should might must got made went took found felt saw"
)


def _reads_as_verb(word: str) -> bool:
    """A third-person or past verb form: "sells", "moved", "is", "went"."""
    return word in _IRREGULAR_VERBS or word.endswith(("s", "ed"))


def _plain_statement(text: str, said_by_someone: bool) -> bool:
    """A sentence no rule knows, kept as `other` only when it reads as a plain statement about
    someone: said by a named speaker in the first person (`said_by_someone`: converted, so it names
    them), or written about someone ("Alice sells candles.") or as a note with no subject ("Prefers
    dark mode."); three words at least, a full stop, not addressed to someone, not pointing or
    exclaiming, not a passing feeling, no photo caption, and nothing left in the first person."""
    lower = text.lower()
    words = _WORD.findall(lower)
    if not said_by_someone:
        # "Alice sells …", "The user owns …", "Prefers …" (after a "Note:" label, if any): a verb
        # among the first words; not "Appreciate them a lot."
        statement = _LABEL.sub("", lower)
        if not any(_reads_as_verb(word) for word in _WORD.findall(statement)[:3]):
            return False
    return (
        len(words) >= 3
        and text.endswith(".")
        and not text.startswith("[")
        and _YOU.search(lower) is None
        and _STILL_FIRST_PERSON.search(lower) is None
        and words[0] not in _NOT_STATEMENTS
        and _A_FEELING.match(lower) is None
    )


def _future(form: str) -> Fact | None:
    """A statement in the present about a later date, as a plan keyed by its verb and object."""
    match = re.match(r"^@ ([a-z']+) ?(.*)$", form)
    if match is None or match[1] in _INVARIANT or match[1] in ("is", "are", "has", "have"):
        return None
    return _plan_of(match[1], match[2], form[2:])


_SMALL_ADJECTIVES = _words("sorry fine good great okay ok glad happy here back done sure ready in out")


def _date_last(sentence: str) -> str:
    """'On 7 May 2023 I bought a bike.' → 'I bought a bike on 7 May 2023.' (subject first)."""
    match = LEADING_DATE.match(sentence)
    if match is None:
        return sentence
    body = sentence[match.end() :].strip()
    if not _FIRST_PERSON.match(body):
        return sentence
    phrase = match.group().strip(" ,")
    return f"{body.rstrip('.!…')} {phrase[0].lower()}{phrase[1:]}."


def _third_person(sentence: str, past: bool) -> tuple[str, str] | None:
    """(lead, predicate) of a first-person sentence in the third person: the record is the subject's
    name + lead + " " + predicate ("" for "I", "'s" for "My", " and others" for "We"); None when the
    sentence does not start with the speaker."""
    match = _FIRST_PERSON.match(sentence)
    if match is None:
        return None
    rest = match["rest"]
    if match["pair"]:
        lead = f" and their {match['other']}"
    elif match["we"]:
        lead = " and others"
        rest = {"'re": "are ", "'ve": "have ", "'ll": "will ", "'d": "would "}.get(
            (match["wec"] or "").lower(), ""
        ) + rest
    elif match["my"]:
        lead = "'s"
    else:
        conjugated = _conjugated(match["ic"], rest, past)
        if conjugated is None:
            return None
        lead, rest = "", conjugated
    rest = _PRONOUN.sub(lambda found: _PRONOUN_SWAP[found.group()], rest.strip())
    rest = re.sub(r"[!…]+$", ".", rest).strip()
    if not rest or not rest[0].isalnum():
        return None
    return lead, rest


def _conjugated(contraction: str | None, rest: str, past: bool) -> str | None:
    """The predicate after "I", its verb in the third person: "live in Paris" → "lives in Paris"."""
    if contraction:
        contraction = contraction.lower()
        if contraction == "'d":
            return ("had " if rest.lower().startswith("been ") else "would ") + rest
        return {"'m": "is", "'ve": "has", "'ll": "will"}[contraction] + " " + rest
    words = rest.split(" ")
    index = 0
    while index < len(words) and words[index].lower() in _SKIP_BEFORE_VERB:
        index += 1
    if index == len(words) or not re.fullmatch(r"[A-Za-z][a-z']*", words[index]):
        return None
    words[index] = _verb_third_person(words[index], past)
    return " ".join(words)


def _verb_third_person(verb: str, past: bool) -> str:
    lower = verb.lower()
    if lower in _THIRD_PERSON:
        return _THIRD_PERSON[lower]
    if lower in _INVARIANT or _is_past(lower) or (past and lower in _SAME_PAST):
        return verb
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(lower) > 1 and lower.endswith("y") and lower[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _is_past(verb: str) -> bool:
    return (verb in _IRREGULAR_PAST and verb not in _SAME_PAST) or (
        verb.endswith("ed") and len(verb) > 4 and verb not in _NOT_PAST
    )


def _record_text(text: str) -> str:
    """One sentence: a capital first, a full stop last, at most MAX_RECORD_CHARS characters."""
    text = " ".join(text.split()).rstrip(" ,;:")
    text = text[0].upper() + text[1:]
    if text[-1] not in ".!?…":
        text += "."
    if len(text) > MAX_RECORD_CHARS:
        text = text[: MAX_RECORD_CHARS - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"
    return text


def _classifiable(lead: str, rest: str) -> str:
    """The form the rules read: '@' for the subject, lower case, contractions and adverbs normalised."""
    subject = "@'s" if lead == "'s" else "@"  # "and others", "and their wife": the speaker too
    text = f"{subject} {rest}".lower().translate(_APOSTROPHES)
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    text = _ADVERB_RUN.sub("", text)
    return " ".join(text.split()).rstrip(" .!…")


def read_third_person(
    text: str, user_name: str | None, require_subject: bool = False
) -> tuple[str, Fact | None] | None:
    """(person key, fact) of a statement in the third person ("Caroline lives in Paris.", "Lives in
    Paris.", "Caroline's sister is a nurse."): the subject is the first one to three words after which
    the rest reads as a statement, else none (the user's)."""
    text = LEADING_DATE.sub("", text.translate(_APOSTROPHES)).strip()
    words = text.split(" ")
    for size in (1, 2, 3, 0):
        if size >= len(words) or (size == 0 and require_subject):
            continue
        subject = " ".join(words[:size]).rstrip(",")
        lead = ""
        if subject.endswith("'s"):
            subject, lead = subject[:-2], "'s"
        fact = classify(_classifiable(lead, " ".join(words[size:])))
        if fact is not None and fact is not _DROP:
            return (_person_key(subject, user_name) if size else USER), fact
    return None if require_subject else (USER, None)


# --- Classification --------------------------------------------------------------------------------


def _stem(word: str) -> str:
    """A crude stem, the same for a word's usual forms: live/lives/living/lived → liv, puppies → puppy."""
    word = word.lower().strip("'")
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s", "e"):
        if (
            word.endswith(suffix)
            and len(word) - len(suffix) >= 3
            and not (suffix == "s" and word.endswith("ss"))
        ):
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1].isalpha() and word[-1] not in "lsz":
        word = word[:-1]
    return word


_NOISE_STEMS = frozenset(_stem(word) for word in _NOISE_HEADS)


def _content(text: str) -> list[str]:
    return [
        word
        for word in _WORD.findall(text.lower())
        if word not in _STOP
        and word not in _ADVERBS
        and word not in _NUMBERS
        and word not in _PLAIN_ADJECTIVES
        and not word.isdigit()
    ]


def signature(text: str) -> frozenset[str]:
    """What makes two statements repeats of each other: their stemmed content words, dates and
    negations included ("is not vegan" is no repeat of "is vegan")."""
    return frozenset(
        _stem(word)
        for word in _WORD.findall(text.lower().translate(_APOSTROPHES))
        if word in ("not", "no") or (word not in _STOP and word not in _ADVERBS)
    )


def _phrase(text: str) -> str:
    """The stemmed noun phrase an object starts with (at most three content words), or ''."""
    head = _BOUNDARY.split(" " + text.strip(), maxsplit=1)[0]
    return " ".join(_stem(word) for word in _content(head)[:3])


def _objects(text: str | None, compare: bool = False) -> frozenset[str]:
    """The object noun phrases of a predicate; `compare`: "tea over coffee" names both."""
    if not text:
        return frozenset()
    text = re.sub(r"^to ", "", text.strip())
    parts = _COMPARISON.split(text) if compare else [text]
    if compare and len(parts) == 1:
        parts = re.split(r" to ", text, maxsplit=1)
    phrases = {_phrase(part) for part in parts}
    # "a great time", "a question": nothing but small talk; "a great concert" is a concert.
    return frozenset(phrase for phrase in phrases if phrase and not set(phrase.split()) <= _NOISE_STEMS)


def _group(match: re.Match[str], name: str) -> str | None:
    return match.groupdict().get(name)


def _negative(match: re.Match[str]) -> bool:
    """ "doesn't like" and "hates", "no longer has" and "sold" say the opposite of "likes" and "has"."""
    return (_group(match, "neg") is not None) != (_group(match, "minus") is not None)


def _single(category: str, *slot: str) -> _Builder:
    def build(match: re.Match[str]) -> Fact:
        obj = _group(match, "obj") or _group(match, "obj2")
        return Fact(category, slot, _objects(obj), negative=_negative(match))

    return build


def _by_object(category: str, *slot: str, compare: bool = False) -> _Builder:
    def build(match: re.Match[str]) -> Fact | None:
        obj = _group(match, "obj") or ""
        if _YOU.search(obj) or re.match(r"(?:how|what|when|why|where|who|that|the fact|it|this)\b", obj):
            return _DROP  # "I love how you …", "I love your painting": about the other person
        objects = _objects(obj, compare)
        if not objects:
            return _DROP
        return Fact(category, slot, objects, by_object=True, negative=_negative(match))

    return build


def _named(category: str, slot: str, group: str) -> _Builder:
    """One slot per value of a group: 'identity/vegan', 'work/about/company'."""

    def build(match: re.Match[str]) -> Fact:
        value = " ".join(_stem(word) for word in _WORD.findall(match[group]))
        return Fact(category, (slot, value), _objects(_group(match, "obj")), negative=_negative(match))

    return build


def _plan(match: re.Match[str]) -> Fact:
    obj = match["obj"].strip()
    words = obj.split()
    if not words or _YOU.search(obj):
        return _DROP
    verb = _group(match, "verb") or words[0]
    return _plan_of(verb, obj if _group(match, "verb") else " ".join(words[1:]), obj)


def _plan_of(verb: str, rest: str, obj: str) -> Fact:
    """A plan keyed by its verb, and by its object unless it is a move, a retirement, a wedding."""
    if verb in _PLAN_NOISE and not _PLAN_GO.match(obj):
        return _DROP
    stem = _stem(verb.split()[-1])  # "getting married": married
    if stem in ("mov", "relocat", "retir", "quit", "leav", "marri"):
        return Fact("plan", ("plan", stem), _objects(rest))
    objects = _objects(rest)
    if not objects and not rest:
        return _DROP
    keys = frozenset(f"{stem} {phrase}" for phrase in objects) or frozenset({stem})
    return Fact("plan", ("plan", stem), keys, True)


def _plan_fact(fact: Fact) -> Fact:
    """A statement about a later date, as a plan: what it is about stays its key."""
    if fact.category == "plan":
        return fact
    slot = ("plan", *(fact.slot or ("event",)))
    return Fact("plan", slot, fact.objects, fact.by_object, fact.negative)


def _home(match: re.Match[str]) -> Fact | None:
    if match["verb"] == "lived" and not match["aux"]:
        return None  # "I lived in Paris": an event of the past, not where they live
    if match["prep"] == "from" and not re.search(r"\b(?:to|into)\b", match["obj"]):
        return Fact("location", ("origin",), _objects(match["obj"]))  # "I moved from Sweden"
    return Fact("location", ("home",), _objects(match["obj"]), negative=match["neg"] is not None)


def _born(match: re.Match[str]) -> Fact:
    obj = match["obj"]
    if re.match(rf"(?:\d|{_MONTH.lower()})", obj):
        return Fact("identity", ("birth",))
    return Fact("location", ("origin",), _objects(obj))


def _event(match: re.Match[str]) -> Fact | None:
    verb = _group(match, "verb") or ""
    obj = _group(match, "obj") or ""
    if verb and (verb in _EVENT_NOISE or not (_is_past(verb) or verb in _SAME_PAST or verb in _PARTICIPLES)):
        return None
    content = _content(obj)
    if (
        not content
        or set(content) <= _NOISE_HEADS
        or _YOU.search(obj)
        or re.search(r"\b(?:didn't|never)\b", obj)
    ):
        return _DROP
    return Fact("event", None)


def _dated_event(match: re.Match[str]) -> Fact | None:
    # "I was in Paris on 7 May 2023" is an event; "I was so tired" is not.
    return _event(match) if _NAMED_DATE.search(match.group()) or re.search(r"\d{4}", match.group()) else None


def _identity_noun(match: re.Match[str]) -> Fact | None:
    head = _BOUNDARY.split(" " + match["obj"], maxsplit=1)[0].split()
    if (
        not head
        or head[0] in _words("bit little lot tad fan huge big sucker mess wreck")
        or _YOU.search(match["obj"])
    ):
        return None
    return Fact("identity", ("is", _stem(head[-1])), negative=match["neg"] is not None)


_RULES: tuple[tuple[re.Pattern[str], _Builder], ...] = tuple(
    (re.compile(pattern), builder)
    for pattern, builder in (
        # Plans first: "I'm going to move to Paris" is not where they live.
        (
            r"^@ (?:is|are) (?:going to|planning (?:to|on)|hoping to|about to|thinking (?:of|about)|"
            r"looking forward to|considering|aiming to|intending to|excited to|eager to|set to|scheduled to) "
            r"(?P<obj>.+)",
            _plan,
        ),
        (
            r"^@ (?:will|shall|plans? to|wants? to|hopes? to|intends? to|would (?:like|love) to|"
            r"can't wait to|dreams? of|(?:has|have) dreamed of|(?:has|have) decided to|decided to) "
            r"(?P<obj>.+)",
            _plan,
        ),
        (
            r"^@ (?:is|are) (?P<verb>moving|relocating|leaving|flying|travell?ing|heading|getting married|"
            r"having a baby|expecting|starting|retiring) ?(?P<obj>.*)",
            _plan,
        ),
        (r"^@ used to (?P<obj>.+)", lambda match: Fact("event", None)),
        # Identity.
        (
            r"^@'s (?:(?:main|big|biggest|long-term|new) )?"
            r"(?:goal|dream|plan|aim|ambition|hope|wish|resolution|"
            r"intention)s? (?:is|are|was|for [\w ]+ is) (?:to )?(?P<obj>.+)",
            _plan,
        ),
        (r"^@'s (?:full |real |first |last |nick)?name is (?P<obj>.+)", _single("identity", "name")),
        (
            r"^@ (?:is|are|goes by|go by) (?:called|named|known as|by) (?P<obj>.+)",
            _single("identity", "name"),
        ),
        (
            r"^@ (?:is|are|turned|turns) (?P<obj>\d{1,3})(?: years? old| yo)?"
            r"(?:$| (?:today|on|in|this|last|and)\b)",
            _single("identity", "age"),
        ),
        (r"^@'s age is (?P<obj>\d{1,3})", _single("identity", "age")),
        (r"^@ (?:was|were) born (?:on|in|at) (?P<obj>.+)", _born),
        (r"^@'s birthday is (?P<obj>.+)", _single("identity", "birthday")),
        (r"^@'s pronouns are (?P<obj>.+)", _single("identity", "pronouns")),
        (
            r"^@ (?:is|are) "
            + _NEG
            + r"(?:an? )?(?:proud |openly )?(?:trans(?:gender)?|non-?binary|genderqueer|"
            r"genderfluid|agender|cis(?:gender)?|intersex)(?: (?:woman|man|person|female|male|girl|guy))?\b",
            _single("identity", "gender"),
        ),
        (r"^@ (?:came out|transitioned|has transitioned)\b(?P<obj>.*)", _single("identity", "out")),
        (
            r"^@ (?:is|are) "
            + _NEG
            + r"(?:an? )?(?:proud )?(?:gay|lesbian|bisexual|bi|queer|pansexual|asexual|"
            r"aromantic|straight|heterosexual|homosexual)\b",
            _single("identity", "orientation"),
        ),
        (
            r"^@ (?:is|are) "
            + _NEG
            + rf"(?:an? )?(?:proud )?(?:{_NATIONALITIES})(?: citizen| national)?(?:$|[ ,])",
            _single("identity", "nationality"),
        ),
        (r"^@ (?:is|are) (?:an? )?\w+ citizen\b", _single("identity", "nationality")),
        (
            r"^@ " + _NEG + r"(?:is|are|became) (?:allergic|intolerant) to (?P<obj>.+)",
            _by_object("identity", "allergy"),
        ),
        (
            r"^@ (?:is|are|has been|became) "
            + _NEG
            + r"(?:an? )?(?P<what>vegan|vegetarian|pescatarian|diabetic|"
            r"celiac|coeliac|lactose intolerant|gluten[- ]free|christian|muslim|jewish|hindu|buddhist|"
            r"catholic|"
            r"protestant|mormon|sikh|atheist|agnostic|religious|spiritual|introverted|extroverted|introvert|"
            r"extrovert|left-handed|right-handed|deaf|blind|autistic|dyslexic|disabled|sober|pregnant|"
            r"colou?rblind)\b",
            _named("identity", "is", "what"),
        ),
        (
            r"^@ (?:has|have) (?P<what>adhd|autism|diabetes|asthma|anxiety|depression|dyslexia|epilepsy|"
            r"celiac disease|ptsd|ocd|long covid|cancer|arthritis|migraines)\b",
            _named("identity", "condition", "what"),
        ),
        (
            r"^@ (?:is|are) (?:an? )?(?:active |proud |long-time )?(?:member of|part of) (?P<obj>.+)",
            _by_object("identity", "member"),
        ),
        # Location.
        (
            r"^@ (?P<aux>(?:has|have|had) been |(?:has|have) |is |are )?"
            + _NEG
            + r"(?P<verb>lives?|living|lived|"
            r"resides?|residing|moved|relocated|settled|based|located)(?: (?:back|over|out|away|down|up))?"
            rf" (?P<prep>{_PREPOSITIONS})\b ?(?P<obj>.*)",
            _home,
        ),
        (r"^@'s (?:address|home address) is (?P<obj>.+)", _single("location", "home")),
        (
            r"^@ (?:is |are |was |were |comes? |came )?from (?P<obj>.+)"
            r"|^@ grew up (?:in|on|near|around|outside|by) (?P<obj2>.+)",
            _single("location", "origin"),
        ),
        (r"^@'s (?:hometown|home town) is (?P<obj>.+)", _single("location", "origin")),
        # Work.
        (
            r"^@ (?:(?:quit|left|lost|resigned from|gave up|(?:was|got) (?:fired|laid off) from) "
            r"(?:their |the |a )?(?:job|position|role|work)"
            r"|(?:was|got|has been|were) (?:fired|laid off|let go|made redundant)|retired"
            r"|(?:is|are) (?:retired|unemployed|between jobs|out of work|"
            r"looking for (?:a )?(?:new )?(?:job|work)|"
            r"job[- ]hunting|self-employed|a stay-at-home (?:mom|dad|parent)))\b",
            _single("work", "job"),
        ),
        (
            r"^@ (?:(?:has|have) been |is |are )?(?:working|works?) on (?P<obj>.+)",
            _by_object("work", "project"),
        ),
        (
            r"^@ (?:(?:has|have) been |is |are )?" + _NEG + r"(?:works?|working)\b (?:at|for|as|in|with|from|"
            r"full[- ]time|part[- ]time|remotely|freelance|nights|shifts)\b ?(?P<obj>.*)",
            _single("work", "job"),
        ),
        (
            r"^@ (?:got|landed|started|accepted|took|has|have|found|began|starts?|secured|was offered|"
            r"received) (?:an? |their |the )?(?:(?:new|first|dream|full-time|part-time|summer|temporary|"
            r"permanent|great) )*(?:job|position|role|internship|gig|career)\b"
            r"(?! (?:interview|fair|hunt|search|application|offer))(?P<obj>.*)",
            _single("work", "job"),
        ),
        (r"^@ (?:was|got|has been|were) promoted\b(?P<obj>.*)", _single("work", "job")),
        (r"^@'s (?:job|role|position|job title|title) is (?P<obj>.+)", _single("work", "job")),
        (
            r"^@ (?:is|are|became|has become) (?:an? )?"
            r"(?:(?!(?:of|their|the|to|for|with|in|at|on|and|his|her)\b)"
            rf"[\w-]+ ){{0,3}}?(?:{_JOBS})s?\b(?P<obj>.*)",
            _single("work", "job"),
        ),
        (
            r"^@ (?:(?:has|have) been |is |are )?"
            r"(?:studying|studies|study|majoring in|majors? in|enrolled in|"
            r"pursuing|doing (?:an? |their )?(?:phd|master's|masters|master|bachelor's|bachelors|degree|mba|"
            r"doctorate))\b(?P<obj>.*)"
            r"|^@ (?:is|are) in (?:college|university|uni|grad school|graduate school|high school|med school|"
            r"law school|school)\b|^@ (?:graduated|has graduated)\b(?P<obj2>.*)",
            _single("work", "study"),
        ),
        (
            r"^@ (?:runs?|owns?|founded|co-founded|started|launched|opened|manages?|has|have|set up|built) "
            r"(?:an? |their |the )?(?:(?:own|small|new|little|online|family) )*(?:[\w-]+ ){0,2}?"
            r"(?P<what>business|company|startup|start-up|shop|store|bakery|restaurant|cafe|café|agency|"
            r"practice|firm|studio|brand|clinic|salon|boutique|farm|consultancy|nonprofit|non-profit|"
            r"charity)\b",
            _named("work", "company", "what"),
        ),
        (
            r"^@ (?:sells?|teach(?:es)?|tutors?|coach(?:es)?|freelances?|consults?) (?P<obj>.+)",
            _by_object("work", "trade"),
        ),
        (rf"^@'s (?P<what>{_WORK_NOUNS})\b(?P<obj>.*)", _named("work", "about", "what")),
        # Relationships (what is said of a relative is read in `classify`).
        (
            r"^@ (?:(?:is|are|was|were|has been|have been|got) )?"
            + _NEG
            + r"(?:married|engaged|divorced|separated|"
            r"widowed|single|in a relationship|dating|seeing someone|broke up|breaking up|split up|proposed|"
            r"tied the knot)\b",
            _single("relationship", "status"),
        ),
        (
            r"^@ (?:has|have|adopted) " + _NEG + r"(?:an? |one |twin |some |many |no |a few )?"
            r"(?:\d+ |two |three |four |five |six )?(?P<obj>(?:[\w-]+ ){0,2}?(?P<rel>"
            + "|".join(sorted(_RELATIONS, key=len, reverse=True))
            + r"))\b",
            lambda match: Fact(
                "relationship",
                ("rel", _RELATIONS[match["rel"]]),
                _objects(match["obj"]) or frozenset({_RELATIONS[match["rel"]]}),
                True,
                match["neg"] is not None,
            ),
        ),
        (
            r"^@ (?:is|are) (?:an? )?(?:(?:proud|single|busy|new|first-time|stay-at-home|working) )*"
            r"(?:mom|mother|dad|father|parent|grandma|grandmother|grandpa|grandfather)\b",
            _single("relationship", "parent"),
        ),
        # Preferences.
        (
            r"^@'s (?:all-time |absolute |new )?(?:favou?rite|fave|fav|preferred) (?P<what>[\w' -]+?) "
            r"(?:is|are|was|has to be|would be) (?P<obj>.+)",
            _named("preference", "favourite", "what"),
        ),
        (
            r"^@ " + _NEG + r"(?:prefers?|preferred) (?P<obj>.+)",
            _by_object("preference", "like", compare=True),
        ),
        (
            r"^@ "
            + _NEG
            + r"(?:likes?|loves?|enjoys?|adores?|(?P<minus>hates?|dislikes?|detests?|can't stand)|"
            r"can't live without|is into|are into|(?:is|are) (?:a )?(?:big |huge |massive |real )?fans? of|"
            r"(?:is|are) (?:obsessed with|passionate about|crazy about|addicted to)|"
            r"is a (?:big |huge )?lover of|is keen on|is fond of) (?P<obj>.+)",
            _by_object("preference", "like"),
        ),
        (
            r"^@ "
            + _NEG
            + r"(?:uses?|drinks?|eats?|listens? to|plays?|wears?|rides?|cooks?|bakes?|paints?|draws?|"
            r"knits?|swims?|hikes?|practi[cs]es?|collects?|speaks?|codes? in|programs? in|"
            r"volunteers? (?:at|for)|"
            r"goes to|does) (?P<obj>.+)",
            _by_object("preference", "like"),
        ),
        # Possessions: one record per thing owned; selling or losing it supersedes it.
        (
            r"^@ "
            + _NEG
            + r"(?:has|have|has got|have got|owns?|bought|purchased|acquired|adopted|received|inherited|"
            r"got|picked up|(?:was|were) given|(?P<minus>sold|gave away|donated|got rid of|traded in|lost)) "
            # Not "has to", nor a present perfect ("has learned", "has been"): those are not things.
            r"(?!to\b|been\b|had\b|got\b|done\b|always\b|[a-z]+ed\b|"
            + "|".join(sorted(_PARTICIPLES))
            + r"\b)(?P<obj>.+)",
            _by_object("possession", "own"),
        ),
        # Other ongoing things: learning, training, saving up.
        (
            r"^@ (?:is|are|has been|have been) "
            r"(?P<what>learning|practicing|practising|training for|preparing for|"
            r"saving (?:up )?for|working towards|getting into|taking (?:lessons|classes|a class|a course)) "
            r"?(?P<obj>.*)",
            lambda match: Fact("other", ("doing", _stem(match["what"].split()[0])), _objects(match["obj"])),
        ),
        # Events: what they did, never superseded.
        (
            r"^@ (?:has|have) (?:never )?(?P<verb>been|done|seen|gone|run|taken|made|met|won|read|written|"
            r"finished|started|completed|visited|travell?ed|tried|[a-z]+ed)\b(?P<obj>.*)",
            _event,
        ),
        (r"^@ (?:was|were) (?P<obj>.+)", _dated_event),
        (r"^@ (?P<verb>[a-z']+)\b(?P<obj>.*)", _event),
        # Last: "I am a …" that no rule above names (a job, a parent, a fan) is who they are.
        (r"^@ (?:is|are) " + _NEG + r"(?:an?) (?P<obj>.+)", _identity_noun),
    )
)

_RELATIVE = re.compile(
    r"^@'s (?:(?:best|close|closest|older|younger|little|big|oldest|youngest|eldest|new|ex|late|step|twin|"
    r"baby|dear|sweet|lovely|amazing|wonderful) )*(?P<rel>"
    + "|".join(sorted(_RELATIONS, key=len, reverse=True))
    + r")\b(?P<rest>.*)$"
)
_PET = re.compile(
    r"^@'s (?:(?:new|little|old|sweet|two|three) )*(?P<pet>" + "|".join(sorted(_PETS)) + r")\b(?P<rest>.*)$"
)
_BELONGING = re.compile(
    r"^@'s (?:(?:new|old|first) )*(?P<thing>" + "|".join(sorted(_BELONGINGS)) + r")\b(?P<rest>.*)$"
)
_NAME_OF = re.compile(r"^(?:'s name is|(?:is|are) (?:named|called)) (?P<obj>.+)")


def classify(text: str) -> Fact | None:
    """The fact a statement in the rules' form ("@ lives in berlin") says; None when no rule knows it,
    `_DROP` when one does and it is not worth keeping."""
    for pattern, builder in _RULES:
        match = pattern.match(text)
        if match is None:
            continue
        fact = builder(match)
        if fact is not None:
            return fact
    return _about_someone(text)


def _about_someone(text: str) -> Fact | None:
    """What a statement says of a relative, a pet or a belonging: the rules read its rest as said of
    them, under a slot of their own ("My sister lives in Rome" → rel/sister/location/home)."""
    for pattern, group, category, prefix in (
        (_RELATIVE, "rel", "relationship", "rel"),
        (_PET, "pet", "possession", "pet"),
        (_BELONGING, "thing", "possession", "thing"),
    ):
        match = pattern.match(text)
        if match is None:
            continue
        who = _RELATIONS.get(match[group], _stem(match[group]))
        rest = match["rest"].strip(" ,")
        name = _NAME_OF.match(rest)
        if name:
            return Fact(category, (prefix, who, "name"))
        fact = _rest_fact(rest)
        named = ""
        if fact is None and rest:
            # "My friend Anna moved to Paris": the name, then what is said of her.
            first, _, after = rest.partition(" ")
            fact = _rest_fact(after.strip(" ,"))
            named = first.strip(",")
        if fact is None or fact is _DROP:
            return fact
        category = "event" if fact.category == "event" else category
        return fact.keyed((prefix, who, named) if named else (prefix, who), category)
    return None


def _rest_fact(rest: str) -> Fact | None:
    # The rules read "is a nurse" of the relative as they read "@ is a nurse" of the speaker.
    return classify(f"@{rest}" if rest.startswith("'s") else f"@ {rest}") if rest else None


# --- Operations ------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Entry:
    """A current record while the answer is planned: one the prompt lists, or one it adds."""

    fact: Fact | None
    signature: frozenset[str]
    record_id: str | None = None
    operation: Operation | None = None  # the operation that brought it, for one this answer adds


class _Current:
    """The current records, indexed by slot (and object) and by signature: each look-up is a dict's."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, ...], list[_Entry]] = {}
        self._by_signature: dict[frozenset[str], _Entry] = {}

    @staticmethod
    def _keys(fact: Fact | None) -> list[tuple[str, ...]]:
        if fact is None or fact.slot is None:
            return []
        if fact.by_object:
            return [(*fact.slot, "\x00", phrase) for phrase in sorted(fact.objects)]
        return [fact.slot]

    def add(self, entry: _Entry) -> None:
        for key in self._keys(entry.fact):
            self._by_key.setdefault(key, []).append(entry)
        self._by_signature.setdefault(entry.signature, entry)

    def remove(self, entry: _Entry) -> None:
        for key in self._keys(entry.fact):
            entries = self._by_key.get(key, [])
            if entry in entries:
                entries.remove(entry)
        if self._by_signature.get(entry.signature) is entry:
            del self._by_signature[entry.signature]

    def repeat_of(self, signature: frozenset[str]) -> _Entry | None:
        return self._by_signature.get(signature)

    def same_subject(self, fact: Fact) -> list[_Entry]:
        found: dict[int, _Entry] = {}
        for key in self._keys(fact):
            for entry in self._by_key.get(key, []):
                found.setdefault(id(entry), entry)
        return list(found.values())


def plan_operations(
    records: Sequence[CurrentRecord], statements: Sequence[Statement], user_name: str | None = None
) -> list[Operation]:
    """The operations that bring the records up to date with the statements, oldest statement first."""
    current = _Current()
    for record in records:
        read = read_third_person(record.text, user_name)
        fact = read[1].keyed((read[0],)) if read is not None and read[1] is not None else None
        current.add(_Entry(fact, signature(record.text), record_id=record.record_id))
    operations: list[Operation] = []
    for statement in statements:
        sig = signature(statement.text)
        same = current.same_subject(statement.fact)
        repeat = current.repeat_of(sig) or next(
            (entry for entry in same if _says_same(entry, statement)), None
        )
        if repeat is not None:
            if repeat.operation is not None and statement.item_id:
                sources = repeat.operation.source_items
                sources.extend([statement.item_id] if statement.item_id not in sources else [])
            continue
        entry = _Entry(statement.fact, sig)
        for old in same:
            current.remove(old)
            operation = old.operation
            if operation is not None:
                # Said earlier in this burst (a backfill): kept, and ended by this newer statement,
                # so what was true before stays on record (`as_of`).
                ending = Operation("invalidate", None, target=operation)
                if entry.operation is None:
                    ending.replace_with(statement)
                    entry.operation = ending
                operations.append(ending)
            elif entry.operation is None:
                entry.operation = Operation("invalidate", old.record_id)
                entry.operation.replace_with(statement)
                operations.append(entry.operation)
            else:
                operations.append(Operation("invalidate", old.record_id))
        if entry.operation is None:
            entry.operation = Operation("add", None)
            entry.operation.replace_with(statement)
            operations.append(entry.operation)
        current.add(entry)
    return _within_limit(operations)


def _says_same(entry: _Entry, statement: Statement) -> bool:
    """The same object in the same slot, same polarity: "moved to Berlin" repeats "lives in Berlin"."""
    fact = entry.fact
    new = statement.fact
    return (
        fact is not None
        and bool(fact.objects)
        and fact.negative == new.negative
        and (
            fact.objects == new.objects
            if not new.by_object
            else fact.slot == new.slot and fact.objects >= new.objects
        )
    )


def _within_limit(operations: list[Operation]) -> list[Operation]:
    """At most MAX_RECORD_OPERATIONS: invalidations first, then the most durable adds, newest first."""
    if len(operations) <= MAX_RECORD_OPERATIONS:
        return operations
    ranked = sorted(
        range(len(operations)),
        key=lambda index: (
            operations[index].op != "invalidate",
            _category_rank(operations[index].category),
            -_ordinal(operations[index].valid_from or operations[index].day, date.max),
            -index,
        ),
    )
    kept = set(ranked[:MAX_RECORD_OPERATIONS])
    return [operation for index, operation in enumerate(operations) if index in kept]


# --- The summary -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SummaryRecord:
    text: str
    category: str
    when: date | None


def current_records(records: Sequence[CurrentRecord], operations: Sequence[Operation]) -> list[SummaryRecord]:
    """The records current after the operations: the listed ones not invalidated, then the new ones."""
    invalidated = {operation.record_id for operation in operations if operation.op == "invalidate"}
    ended = {id(operation.target) for operation in operations if operation.target is not None}
    kept = [
        SummaryRecord(record.text, record.category, record.since)
        for record in records
        if record.record_id not in invalidated
    ]
    # A new record without a date is as new as its burst: after every dated one of its category.
    added = [
        SummaryRecord(
            operation.text, operation.category or "other", operation.valid_from or operation.day or date.max
        )
        for operation in operations
        if operation.text and id(operation) not in ended
    ]
    return kept + added


def summary_from_records(records: Sequence[SummaryRecord], max_words: int) -> str:
    """Whole records within `max_words`, the most durable categories first, newest first within one."""
    ordered = sorted(
        enumerate(records),
        key=lambda pair: (_category_rank(pair[1].category), -_ordinal(pair[1].when, date.min), pair[0]),
    )
    chosen: list[str] = []
    words = 0
    for _, record in ordered:
        size = count_words(record.text)
        if words + size <= max_words:
            chosen.append(" ".join(record.text.split()))
            words += size
    if not chosen and ordered:
        # Even the first record is over budget: its first `max_words` words, as a model would cut.
        return " ".join(ordered[0][1].text.split()[:max_words])
    return " ".join(chosen)


def _category_rank(category: str | None) -> int:
    return RECORD_CATEGORIES.index(category) if category in RECORD_CATEGORIES else len(RECORD_CATEGORIES)


def _ordinal(day: date | None, missing: date) -> int:
    return (day or missing).toordinal()
