// Function words that carry no topic. They stay in the index (a query made only of them still
// works) but they are left out of coverage weights and out of the full-text query whenever the
// query has other words, which keeps scores meaningful and BM25 queries fast on large indexes.

const english = `a about above after again against all also am an and any are as at be because been
before being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers herself him himself his how i if in into is it its
itself just me more most my myself no nor not now of off on once only or other our ours ourselves
out over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which while
who whom why will with would you your yours yourself yourselves tell know please there's thing
things get got`;

const chinese = `的 了 是 在 我 你 他 她 它 们 这 那 有 和 与 及 就 都 也 不 吗 呢 吧 啊 呀 么 之 而 或 被 把 给
从 对 向 于 以 上 下 中 个 一 很 还 又 再 没 没有 什么 怎么 怎样 哪 哪里 哪儿 哪个 哪些 为什么 如何 多少 几
我们 你们 他们 她们 它们 这个 那个 这些 那些 这里 那里 一个 是否 关于 请问 一下 可以 是不是 时候 什么时候`;

// Words that frame a question rather than name its topic ("what time…", "on which day…", "what is it
// called", "what did they think of…"): the line that answers rarely holds them. Chosen from the words of
// bench/conversational-retrieval.ts's tuning-half questions that were never in an answer line, keeping only those
// that say how something is asked, not what it is about (never per question).
const questionFrames = "time day date place name named call called choose think";

const stopWords: ReadonlySet<string> = new Set(
  `${english} ${chinese} ${questionFrames}`.split(/\s+/u).filter((word) => word !== ""),
);

/** Whether an analysed term is a function word (English or Chinese) that says nothing about the topic. */
export function isStopWord(term: string): boolean {
  return stopWords.has(term);
}
