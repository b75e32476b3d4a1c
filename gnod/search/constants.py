"""Every constant of the hybrid pipeline, in one frozen tree that `--explain` can print.

Values come from the seeds: "How Search Works" (GNO: strong signal, list weights, limits,
blending) and "Gnosis" (modes, keyword floor, smart skip, score floor, previews).
Nothing else in gnod.search hard-codes a tuning number; change it here and the change
shows up in every `--explain`.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Struct


class StrongSignal(Struct, frozen=True, kw_only=True):
    """Stage 0: skip expansion when BM25 alone is confident and clearly separated.

    Scores are |bm25| / (1 + |bm25|): absolute, unlike search scores (relative to the
    best hit), which always put #1 at 1.0.
    """

    probe: int = 5  # BM25 hits looked at
    min_top: float = 0.84  # normalized score of #1
    min_gap: float = 0.14  # #1 minus #2


class ListWeights(Struct, frozen=True, kw_only=True):
    """Fusion weight by list kind (the same for BM25 and vector lists)."""

    original: float = 2.0  # the user's own query: never diluted by generated variants
    variant: float = 1.0  # LLM lexical / semantic variants
    hyde: float = 1.4  # hypothetical answer passage: strong but indirect


class Fusion(Struct, frozen=True, kw_only=True):
    """Lists are fused by the weighted mean of their standardized scores (gnod.search.fusion).

    Standardizing each list by its own spread, rather than fusing ranks (RRF k=60, the
    seeds' choice), keeps how far apart a list's hits are: a clear BM25 match counts for
    more than a vector list of look-alikes, and a weak retriever drags the fusion down
    less. With the MiniLM test embedder, lists 200 deep, ndcg@10 on SciFact 0.7290 → 0.7408
    and on 1,500 English tldr pages (held out: known items) 0.8297 → 0.8495; better at every
    depth from 20 (benchmarks/fusion_sweep.py).
    """

    weights: ListWeights = ListWeights()


class Limits(Struct, frozen=True, kw_only=True):
    """Candidates fetched per retrieval list, as multiples of the requested limit."""

    bm25_original: int = 2
    bm25_variant: int = 1
    vector_original: int = 2
    vector_variant: int = 1
    vector_hyde: int = 1
    min_fetch: int = 20  # never fewer per list: small -n would starve the fusion
    rerank_top_k: int = 20  # fused candidates sent to the cross-encoder
    # A query spends about this long on the reranker: the first rerank_min_k uncached
    # candidates measure its speed here, and only as many more as fit in the rest of the
    # budget follow (bge-reranker-v2-m3 on one CPU thread scores ~0.3 passages/s, a GPU
    # hundreds: 20 candidates would take a minute on the one and 0.1 s on the other).
    rerank_budget_s: float = 4.0
    rerank_min_k: int = 1


class BlendTier(Struct, frozen=True, kw_only=True):
    """Weights at fused positions up to `max_position` (None: every later position)."""

    max_position: int | None
    fusion: float  # the retrieval (normalized fusion) share
    rerank: float  # the cross-encoder share


class Mode(Struct, frozen=True, kw_only=True):
    """A search mode (Gnosis): how many results, how big a pool, how strict the query."""

    name: str
    max_results: int
    pool: int  # candidates kept after content-hash dedup
    min_keywords: int  # distinct non-stopword query terms required
    smart_skip: bool  # may skip the reranker on tiny candidate sets
    preview_expand_top: int  # top-N results eligible for a full-text preview


class KeywordFloor(Struct, frozen=True, kw_only=True):
    """Literal query-term matches keep at least this × fraction of terms matched."""

    max_floor: float = 0.30


class SmartSkip(Struct, frozen=True, kw_only=True):
    """Below `min_candidates`, synthetic scores replace the reranker (standard mode).

    score = min(cap, low + (cap - low) · σ(steepness · (x − center))), where x is the
    fused score over its theoretical maximum, times the vector similarity if any.
    """

    min_candidates: int = 5
    center: float = 0.4
    steepness: float = 10.0
    low: float = 0.40
    cap: float = 0.70  # never "confirmed relevant" without a reranker


class Previews(Struct, frozen=True, kw_only=True):
    """Full text is inlined for confident, short hits among a mode's top N."""

    min_rerank: float = 0.80  # strictly above
    max_chars: int = 2048  # strictly below
    passage_chars: int = 600  # a preview's best passage is cut near this length


class ExpansionLimits(Struct, frozen=True, kw_only=True):
    """What a parsed query expansion may hold (seed 000 shows 2-3 of each, one HyDE)."""

    max_lexical: int = 3
    max_semantic: int = 3
    max_lexical_chars: int = 100  # longer "keyword" lines are prose: dropped
    max_semantic_chars: int = 300  # dropped when longer
    max_hyde_chars: int = 1200  # truncated at a word boundary when longer
    max_tokens: int = 320  # generation budget for one expansion reply
    max_query_chars: int = 1000  # a longer query (a pasted paragraph) is searched as written


class Lexical(Struct, frozen=True, kw_only=True):
    """BM25 search (gnod.search.lexical): which languages stem a query, exact forms, long queries."""

    # A query clearly written in a language the index holds is stemmed in that language
    # only; any other query in the languages holding this share of the index (documents,
    # plus blocks of mixed-language documents) that its function words point to, or in
    # all of them. A language of 1% of the documents (misdetected abstracts, a stray
    # translation) would only add false matches through its stemmer; its documents are
    # still found by their exact words.
    min_language_share: float = 0.05
    # bm25 = (bm25 over stems + exact_weight · bm25 over exact forms) / (1 + exact_weight):
    # the query's own word forms count twice, an inflection that only stemming meets once.
    exact_weight: float = 1.0
    # Among near-equal matches, a document in the query's language (or, for a query that
    # does not say, in the main language of the index) ranks first: bm25 × (1 + prior ×
    # its language's documents / the largest query language's). "tar" in a collection of
    # manual pages in 40 languages matches every translation of tar.md within a few
    # percent; this orders them by the index's languages, never past a match more than
    # this much better.
    language_prior: float = 0.1
    # A document whose title or file name is the query, word for word ("tar" → tar.md,
    # "docker compose" → docker-compose.md), is the one asked for by name; so is a file
    # named after part of the query, where few are: one of its words, as typed or stemmed
    # ("what happens when a process forks" → fork.c), or a run of two or three of them
    # ("kernel coding style" → coding-style.rst). Its names are a short field of their
    # own, as in BM25F: it gets this times the idf of the name's words, as if it held them
    # once more where nothing else is (tf 1 in a field of average length). In a source
    # tree a file is named after what it holds, and a long one ranks low on bm25 alone
    # (as a 10 % lift, kernel/workqueue.c came 26th for "workqueue implementation").
    name_match: float = 1.0
    # A word more documents than this are named after (core.c, main.c, index.md) names
    # none of them in particular: only the query as a whole still does.
    name_part_files_max: int = 30
    # The two or three words a file is named after may stand this many words apart in
    # the query at most, from the first to the last ("page cache writeback" →
    # page-writeback.c; a run of them was asked for, and it came 32nd).
    name_words_span: int = 4
    # A document holding the query's words in order, in any of their forms (a pasted line,
    # an error message, a description), or those of a part of it between punctuation (a pasted
    # message joining several programs' lines), is preferred by this much per word after
    # the first over one holding them apart: a longer line is less likely to be there by
    # chance, and its stopwords, left out of the terms, count only here.
    phrase_match: float = 0.1
    # A query of plain words whose stopwords are left out of its terms ("out of memory",
    # "scheduling while atomic") is also searched as the phrase it says, stopwords and
    # all, when it has at most this many words: its terms alone ("memory") rank any page
    # about them before the one holding the expression, which is what such a query names.
    # A longer one is a question or a pasted paragraph, which no page holds word for word.
    said_max_words: int = 6
    # A phrase (quoted, or a name's words) holds in a document of a language the query is
    # not stemmed in (a French note among English ones, whose phrase tells no language)
    # by that language's stems, where its rarest word is in at most this many documents:
    # then the other languages' phrases read few documents each.
    phrase_elsewhere_docs: int = 1000
    # A query of one identifier (`dwc3_gadget_giveback`, `kmallocNode`) asks where it is
    # defined as often as where it is used: a document defining it (its definitions are
    # parsed after indexing, gnod.server.symbols) counts this much more, enough to pass
    # the files that only call it, more often; and where at most preference_pool files
    # define it, those come first, ranked as the best match (a big header holding the
    # name once scores a fraction of a short caller's bm25).
    definition_match: float = 1.0
    # A query of one plain word (`kmalloc`, `printk`) is such a name where the index holds
    # it uninflected: the documents holding its stem differ in number from those holding
    # it as typed by at most this share of them. Words of prose come in other forms
    # (`lock` 5 %, `interrupt` 21 %, `driver` 64 % on the kernel tree), names of code
    # do not (`kmalloc` 0.5 %, `printk` and `memcpy` 0.1 %).
    name_inflection_share: float = 0.01
    # The preferences first see this many of the best matches by bm25 (40 translations of
    # one page can fill a pool of 20 before the one in the user's language); more are read
    # while a match beyond them could still be lifted into the results, so the results are
    # those of preferences applied to every match. A name defined in more files than this
    # is too common for its definitions to pass every file using it (definition_match).
    preference_pool: int = 100
    # The query's phrase (phrase_match) is first looked for among those best matches only,
    # where the documents holding all its words are estimated at this many or more (the
    # index's documents times each word's share of them, as if independent): over every
    # match, a phrase of common words is read in thousands of documents ("static const
    # struct": 12 of a 15 ms search); a phrase of rarer words is cheaper read at once.
    # Speed only: the results are the same.
    phrase_among_from: int = 1000
    # Matches ranked per query: the limit times pool_factor, never fewer than min_pool;
    # a pool read again with pool_growth times more hits while a match beyond it could
    # still be lifted into the results (lexical.Preferences.best).
    pool_factor: int = 2
    min_pool: int = 20
    pool_growth: int = 4
    # Positive terms searched; a longer query keeps the rarest in the index (highest IDF).
    max_terms: int = 64
    # A query of more words than this besides its `-word`s is a passage pasted (prose, a
    # log line, a comment), whose `-word` is a word of it ("ported from the -rt tree":
    # taken as a negation, it left out mutex.c, the sentence's own file): they are text.
    # A query that leaves words out is typed, and short ("usb -gadget").
    negation_words_max: int = 8
    # A word ending in `*` (what a picker sends for the word being typed) matches the
    # words of the index that start with it: the this-many found in the most documents,
    # each ranked by bm25 as if typed, with the idf of the most frequent of them (a rare
    # one does not outrank the word typed whole). A prefix needs at least prefix_min_chars letters
    # (one letter would stand for thousands of words).
    prefix_expansions: int = 32
    prefix_min_chars: int = 2
    # An identifier being typed (`mutex_lo*`) stands for this many: each is a phrase whose
    # positions the engine reads (32 took `wait_event_in*` 47 ms on the kernel tree, 16
    # 27 ms), and the words are those found most in the documents holding its whole
    # tokens, where the one being typed is among the first (lock, interruptible, irqsave).
    phrase_prefix_expansions: int = 16
    # An identifier being typed completes from the names the collection defines (`search
    # --symbol`'s), where any starts as typed: `of_pr*` stands for `of property` and
    # `of prop` (of_property_read_u32, of_prop_next_string), not the words found most
    # after "of" in any text (`of process`, `of private`), and reads a few phrases, not
    # sixteen. Where more names than this start so, the prefix says too little: the
    # index's words, as for a name the collection only uses.
    name_completions_max: int = 500
    # Of the words a prefix stands for, those it is only the start of count this share of
    # the word typed whole, where that is a word of the index: what a picker sends when
    # `kmalloc` is typed, `kmalloc*`, ranks like `kmalloc` (kmalloc.h, slab.h), not the
    # comments saying "kmalloced" first, while `kmal*` still finds them. At a half,
    # `CONFIG_PM*` put a file holding CONFIG_PM and CONFIG_PMAC_BACKLIGHT first and
    # `ioremap*` one of `err_ioremap1` labels; at a tenth, eight names of the kernel typed
    # whole shared 4-5 of `name`'s top 5 (a helper's list, not tuned to a benchmark).
    prefix_longer_share: float = 0.1
    # A word typed wrong (`kmem_cahce_alloc`, `mutex_lokc`, `CONFIG_PREMPT_RT`) is one edit
    # from a word the index holds (a letter left out, added, changed, or two swapped) in
    # this many times more documents, and of spelling_min_chars letters or more: where
    # nothing matches, the query is searched with that word instead (or a name of code
    # the collections define, one of its words one edit away: `copy_form_user`), and
    # where fewer matches than asked for do, a note suggests it. A tree's own typos (`cahce` in one
    # kernel file, `prempt` in 4) do not make the word a word; a real word beside a more
    # common one (`form`, 11 times fewer than `from`) stays.
    spelling_ratio: float = 50.0
    spelling_min_chars: int = 4
    # A word no document holds is respelled as one in at least this many: a notes folder
    # holds its words in a handful of notes (`autovacum`: 17 hold `autovacuum`, where 50
    # were asked for), and a word in none is no typo of the tree's own.
    spelling_absent_docs: int = 3
    # A longer word or name is no slip of one letter (a pasted DNA sequence, a key): not
    # respelled. Its edits are ~55 strings a letter, each as long as it: a word of 32,000
    # letters took 24 GB before the kernel ended the search.
    spelling_max_chars: int = 64
    # Where some matches are found, only a word in at most this many documents is looked
    # at (one typed wrong is in none, or in a tree's few own typos): a rare name's search
    # (`dwc3_gadget_giveback`, a handful of files) does not pay for its common words' edits.
    spelling_rare_docs: int = 5
    # Where nothing matches and no respelling does, a word of at least this many letters
    # that no document holds is searched as a prefix (`zephyr`: zephyrine; the web page
    # found it while it was typed, as `zephyr*`, and lost it at Enter).
    absent_prefix_min_chars: int = 4
    # The words of a query of at most this many (not function words) that no document
    # holds are named beside its results ("no document has 'zorblax'"); a longer query
    # is pasted text (a page, a log), searched for what it shares with the documents, and
    # the words none holds are no news there.
    absent_said_max_words: int = 8


class Indexing(Struct, frozen=True, kw_only=True):
    """How the lexical index (gnod.store.lexical_index) weighs a document's parts: each
    text field holds the path and the title this many times, then the body once, so a
    title word counts as three body words within one BM25 (one length, one IDF), as
    FTS5's column weights (path 1.5, title 3, body 1) did. Separate fields summed would
    saturate and weigh each part on its own: on SciFact that lost 0.10 ndcg@10. A
    change rebuilds the index at the next start."""

    path_repeat: int = 2
    title_repeat: int = 3
    # In a language that writes compounds as one word (text.compounds), a document's
    # stems also hold each start and end of its words that may be a compound's part: at
    # least compound_part_min letters, the rest at least compound_rest_min (`Steuer`
    # finds Steuerberater, `Frist` Kündigungsfrist; a three-letter word, `Amt`, `Rat`,
    # would find the ends of too many words that are no compounds: Apparat, insgesamt).
    compound_part_min: int = 4
    compound_rest_min: int = 3


INDEXING = Indexing()


class Pipeline(Struct, frozen=True, kw_only=True):
    lexical: Lexical = Lexical()
    strong_signal: StrongSignal = StrongSignal()
    fusion: Fusion = Fusion()
    limits: Limits = Limits()
    blend: tuple[BlendTier, ...] = (
        BlendTier(max_position=3, fusion=0.75, rerank=0.25),
        BlendTier(max_position=10, fusion=0.60, rerank=0.40),
        BlendTier(max_position=None, fusion=0.40, rerank=0.60),
    )
    standard: Mode = Mode(
        name="standard", max_results=32, pool=64, min_keywords=0, smart_skip=True, preview_expand_top=3
    )
    deep: Mode = Mode(name="deep", max_results=100, pool=256, min_keywords=2, smart_skip=False, preview_expand_top=5)
    # Over-fetch factor when shared collections may hold identical content (dedup eats slots).
    dedup_overfetch: int = 2
    keyword_floor: KeywordFloor = KeywordFloor()
    smart_skip: SmartSkip = SmartSkip()
    score_floor: float = 0.03  # results below this are noise: dropped
    previews: Previews = Previews()
    expansion: ExpansionLimits = ExpansionLimits()

    def mode(self, name: str) -> Mode:
        """The mode called `name`; ValueError names the valid ones."""
        if name == "standard":
            return self.standard
        if name == "deep":
            return self.deep
        raise ValueError(f"unknown search mode {name!r}: expected 'standard' or 'deep'")

    def blend_tier(self, position: int) -> BlendTier:
        """Blend weights at a 1-based fused position."""
        for tier in self.blend:
            if tier.max_position is None or position <= tier.max_position:
                return tier
        return self.blend[-1]

    def explain(self) -> dict[str, Any]:
        """Plain dict of every constant, for `--explain` and JSON output."""
        return msgspec.json.decode(msgspec.json.encode(self), type=dict[str, Any])


PIPELINE = Pipeline()


# At start, gnod asks the OS to read the lexical index and the database into its page
# cache (gnod.store.page_cache), up to this share of the memory it says is available.
WARM_MEMORY_SHARE = 0.25
# Reads run on this many threads. With more, every SQLite step and tantivy call that lets
# the GIL go hands it to another reader: measured on tldr with 20 clients searching, four
# readers made 95 context switches per search and served 320 searches/s, one makes 7 and
# serves 450. A long read delays the others by at most its own length (fair queuing),
# and `status` has a thread of its own.
READERS = 1
# Reader threads are shared by start-time fair queuing (server/fair.py): a new client's
# calls are taken to cost this much until its own have been measured, and this many
# clients are remembered before those whose calls all ended are forgotten.
FAIR_COST_S = 0.005
FAIR_MEMORY = 4096
# A read that would wait longer than this behind the calls ahead of it is refused (BUSY,
# with that wait as the retry hint) rather than queued.
OVERLOAD_WAIT_S = 1.0
# `status` reports the readers' latency over this many seconds.
LOAD_WINDOW_S = 60.0
# Path filters: one matching at most this many documents becomes the set of their ids. A
# glob whose literal start (or end) has at least PATH_ANCHOR_MIN characters narrows the
# path term dictionary enough for a regex over it; with a shorter one ("*test*",
# "*.dts*") the regex would walk every path there (18 ms on the kernel tree's 65k), where
# SQLite's GLOB over its path index takes 5. A folder's or an extension's glob ("*/net/*",
# "drivers/*/usb/*.c") is neither: terms of the path's parts (search.lexical._parts_query).
PATH_SETTLED_MAX = 5000
PATH_ANCHOR_MIN = 3
# The ids of this many such globs read from SQLite are kept until the database changes
# (store.kept: an editor sends the same --path with every key typed).
PATH_GLOBS_KEPT = 8
# A longer phrase (a pasted paragraph, `a_a_a_…` of 16,000 words) is matched as its runs
# of this many words, each a phrase, all of them in the document: the engine's phrase
# costs grow with its words (16,000 took 12 s), and the same run is read once.
PHRASE_RUN_WORDS = 32
# A quoted run typed with its marks (`"self._sock"`) puts the documents holding it so
# before those holding its words apart otherwise (`self.sock`): matches are read, best
# first, until a page of them is found or this many were read.
AS_TYPED_READ_MAX = 400
# Occurrences of `**/` in a path glob that may each stand for no folder (filters.path_globs):
# each doubles the globs matched, 2**3 at most.
PATH_ANY_FOLDERS_READ = 3
# The globs one path glob's `{a,b}` groups may stand for (filters.braces): each is a
# query of its own, and groups multiply (`{a,b}/{c,d}` is four).
PATH_BRACE_GLOBS_MAX = 64
# Documents by the values of a numeric field (ids, collections): up to this many values,
# a query of one term each; more, tantivy's term set, whose cost starts higher (0.25 ms
# for one id where a term costs 0.01; 1.7 ms at 100 where the terms cost 0.3) and grows
# slower: on the kernel tree, a path filter settled to 259 ids searched ~1 ms faster by
# terms, one of 411 or 500 no faster.
ID_TERMS_MAX = 300
# Snippets: up to this many characters a text's lines are tested one by one for the
# query's prefixes; a longer text is searched by array compares over the whole of it.
SNIPPET_SMALL_TEXT = 8192
# A long document's snippets are looked for in its first piece of whole lines of about
# this many bytes of text (UTF-8), and in the next pieces only while none has a matching
# line, or a line holding a phrase of the query as typed (Elasticsearch highlights the
# first million characters of a field; Solr's default is 51,200): the kernel's 12.7 MB
# register header cost 'dev* -net*' ~40 ms to decompress, lowercase and scan whole for
# a line that its first lines already give.
SNIPPET_PIECE_BYTES = 1_000_000
# A long text is first looked at through its lines up to its SNIPPET_FIRST_LOOK_BYTES-th
# byte, decompressed alone: when a line there may hold every term of the query, and
# those lines give every snippet asked for holding them all, nothing more is read
# ('dev* -net*' on the kernel: two 1 MB register headers' first pieces, decompressed and
# scanned whole, were 8 of its 14 ms of snippets). A look that fails costs ~0.25 ms, and
# the more terms a query has, the likelier it fails (no line of a file holds every word
# of 'network driver reset'): a text is looked at when it has SNIPPET_LOOK_PER_TERM bytes
# a term, the first SNIPPET_LOOK_TERMS terms counted (a 128 KB text's first piece costs
# ~0.6 ms whole, a 512 KB one's ~2.5).
SNIPPET_FIRST_LOOK_BYTES = 32_768
SNIPPET_LOOK_PER_TERM = 131_072
SNIPPET_LOOK_TERMS = 4
# A search for one name of code whose best passages hold only its words (`total_charges`
# for `TotalCharges`) reads this many, for those holding the name as typed.
SNIPPET_NAME_LOOK = 3
# A snippet is at most this many lines and characters (a longer line is cut around its match).
SNIPPET_MAX_LINES = 3
SNIPPET_MAX_CHARS = 320
# A line longer than that is cut to a window around its first word holding a query term:
# at most this many words holding a term's first three letters are read to find it.
SNIPPET_COLUMN_WORDS = 1000
# A passage of a table's rows says the table's header row (text.tables), read from the whole
# text: in a file of at most this many bytes (a sheet of a million rows costs a search ~0.1 s).
TABLE_HEADER_FILE_MAX_BYTES = 16 << 20
TABLE_HEADER_LOOK_BACK_LINES = 100_000  # rows looked back over for it: a longer table shows none
# A whole number typed of more digits also matches it with its thousands grouped (14880:
# 14.880); one of this many or fewer is a year or a code more often than an amount (1979).
NUMBER_GROUPED_FROM_DIGITS = 4
# Characters per token assumed when turning the reranker's token budget into text (passages).
PASSAGE_CHARS_PER_TOKEN = 3
# `ask`: sources scoring below this fraction of the best one are left out, and so are
# those repeating an earlier one this much (token-set Jaccard); the generator is given
# this many characters of each.
ANSWER_MIN_RELATIVE_SCORE = 0.25
ANSWER_MAX_OVERLAP = 0.7
ANSWER_SOURCE_CHARS = 1500
# Tokens a chat template adds around the messages (role markers, the turn's start and end),
# kept free beside the prompt's own when its sources are fitted to a model's context; an
# answer may take at most this share of that context (the rest is the sources').
ANSWER_TEMPLATE_TOKENS = 64
ANSWER_MAX_CONTEXT_SHARE = 0.5
# `similar`: the words of a document that stand for it in its query, the most informative first.
SIMILAR_MAX_TERMS = 24
# `similar` by words reads a document's first this many characters for them, as Lucene's
# MoreLikeThis parses at most 5,000 tokens: a 24 MB register header took 2-3 s whole
# (the web page of a document waits for its similar ones).
SIMILAR_TEXT_CHARS = 65_536
# A document's identical copies (the same text) that `similar` names, at most, and how
# many of them its note spells out.
SIMILAR_COPIES_MAX = 100
SIMILAR_COPIES_SAID = 3
# Vector search fetches this many chunks per wanted document (more when documents hold
# many near chunks).
VECTOR_OVERFETCH = 3
# Vectors: from this many in a model, KNN asks an int8 HNSW graph (usearch) for candidates
# instead of scanning every row (an exact scan costs ~2.5 ms at 50k × 384 and ~75 ms at a
# million; the graph's first build at 50k takes seconds, and below it nothing is approximate).
VECTOR_ANN_MIN = 50_000
# The graph: neighbours per node (memory ~ 4 bytes each, twice over at the bottom layer),
# search depth while adding, and the least search depth of a query. Measured at 1M × 384
# low-rank vectors (benchmarks/vector_knn.py): 12 neighbours take ~560 MB with the int8
# vectors, 16 take ~620 MB and twice as long to build; with 12, depth 256 finds 93% of
# the true top 10, depth 384 96% (a k=60 query in 4.6 ms).
ANN_CONNECTIVITY = 12
ANN_EXPANSION_ADD = 96
ANN_EXPANSION_SEARCH = 384
ANN_BUILD_THREADS = 0  # every core: a build is rare, and searches scan exactly until it ends
# A query re-scores this many candidates with the float rows: the larger of k times the
# factor and k plus the extra (int8 reorders near ties, and a document's chunks crowd k).
ANN_RESCORE_FACTOR = 2
ANN_RESCORE_EXTRA = 40
# A filter allowing at most this many vectors is scanned exactly over those rows; a wider
# one asks the graph for more candidates (about k over the filter's share), up to the cap,
# and scans its rows when even that many do not hold k.
ANN_EXACT_ALLOWED = 20_000
ANN_MAX_CANDIDATES = 4_096
# Removed vectors leave dead rows behind; at a checkpoint the matrix is rewritten without
# them once there are this many and they are a quarter of all rows.
VECTOR_COMPACT_DEAD = 10_000
# A graph build or a compaction goes this many rows a step (a build stops between two);
# up to VECTOR_PREAD_ROWS rows of a vector file are read one by one, more are mapped.
VECTOR_BUILD_SLICE = 5_000
VECTOR_PREAD_ROWS = 1024
# A background embedding call's most seconds at the speed the last one took: what a
# query's own embedding (or rerank) waits for on the model thread: at 1.3 chunks a second
# (chunks of code, a small CPU), a call of sixteen held a query's embedding for 12 s.
EMBED_CALL_S = 0.5
# A model's vectors are checkpointed beside the database at the end of an embedding run,
# at shutdown, and at least this often while a long run goes on (start-up re-reads from
# SQLite only what came after).
VECTOR_CHECKPOINT_S = 300.0
# `search --symbol`: at most this many contents defining the name (or a prefix's names)
# are read; a definition's passage shows up to this many of its first lines.
SYMBOL_CONTENTS = 2_000
SYMBOL_LINES = 3
# A `search --symbol` hit shows each of its definitions of the names found, up to this
# many (or `per_doc`, if more): slab.h's kmalloc_array beside its kmalloc for `kmalloc*`,
# both `#ifdef` branches' pick_next_task in sched/core.c.
SYMBOL_PASSAGES = 10
# A `search --symbol` prefix whose names more contents than this define is read by its
# shortest names first, a length at a time, until the documents asked for are found: so
# the closest names come first past SYMBOL_CONTENTS too, and `k*` (14,000 contents)
# reads a few instead of 2,000 (143 → 11 ms on the kernel tree, `dev_*` 19 → 8). Fewer
# are read at once, in one statement (`of_pr*`: 56 contents, 2 ms; 7 a length at a time).
SYMBOL_SHORTEST_FROM = 200
# `search --symbol NAME`: at most this many C files holding the words `define NAME` are
# read for an object-like macro's definition (search.macros).
SYMBOL_MACRO_FILES = 100
# `search --symbol NAME` that nothing defines: at most this many of its first words are
# taken for a macro's prefix (`__ia32_compat_sys_` of a system call's `__ia32_compat_sys_openat`);
# each is a lookup, and a name of 16,000 words took 3.7 s.
SYMBOL_MACRO_PREFIX_WORDS = 4
# A search for one name of code that nothing else defines reads this many, for the
# documents defining it to come first (lexical._defining): 100 took PAGE_SIZE's search
# from 6 to 26 ms on the kernel tree; the first of the engine's order hold most of them.
SEARCH_MACRO_FILES = 16
# A search's `wait_s` (read-your-writes) also waits for the OCR of the pictures and scans
# of its collections modified within this many seconds: a scan saved just now is found by
# its text, not only its name; an older backlog (a first index of hundreds of scans) is
# not waited for, or every such search would wait its whole `wait_s`.
OCR_WAIT_RECENT_S = 120.0
# How often a search waiting for OCR looks whether those files are read.
OCR_WAIT_POLL_S = 0.1
