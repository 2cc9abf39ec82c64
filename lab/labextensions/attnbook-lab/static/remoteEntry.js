/*
 * attnbook-lab: a prebuilt JupyterLab 4 extension, written by hand (no build step, no
 * dependencies), that `make lab` loads (lab/jupyter_lab_config.py).
 *
 * jupyterlab-myst renders the chapters' MyST, but it cannot resolve two kinds of reference that
 * the HTML book resolves:
 *   - {numref}`fig-...`: the figures are code-cell outputs named in the cell's metadata
 *     (mystnb.figure.name), which jupyterlab-myst does not read; it shows the bare label with a
 *     warning sign. Here they become "Fig. C.k" (numbered as in the HTML book: chapter C, the
 *     k-th named figure) and a click scrolls to the figure.
 *   - {doc}`05_seq2seq_attention`: jupyterlab-myst links /files/05_seq2seq_attention, which
 *     is no file, with the bare name as text. Here the text becomes the document's title (its
 *     first "# " heading) and a click opens it in JupyterLab.
 *   - {ref}`label` without text, to a `(label)=` target of another document: jupyterlab-myst
 *     shows the bare label. Here it becomes the heading under that target (what the HTML book
 *     shows) and a click opens that document.
 *   - {cite:p}`key` and {cite:t}`key`: jupyterlab-myst cannot read references.bib and shows the bare
 *     key with a "Citation Not Found" sign. Here they become "(Vaswani et al., 2017)" and
 *     "Vaswani et al. (2017)", as in the HTML book, from CITATIONS (every entry of references.bib,
 *     written by tests/tools/lab_citations.py); the title shows the paper, a click opens it.
 * It only changes text and attributes of nodes that jupyterlab-myst rendered; a React re-render
 * replaces them and the observer below processes the new nodes again.
 *
 * It also colours code blocks (show_source listings, ```python in markdown cells): jupyterlab-myst
 * tokenises them with highlight.js (react-syntax-highlighter) into spans classed hljs-keyword,
 * hljs-string, ... but ships no colours for them, so every token had the text colour. SYNTAX
 * gives them the colours of JupyterLab's code editor (its --jp-mirror-editor-* variables, as
 * @jupyterlab/codemirror's highlight style uses them), hence as in code cells, in any theme.
 */
(function () {
  'use strict';

  var UNRESOLVED = '.jp-Notebook .myst span[title="Cross Reference Not Found"]:not([data-attnbook-ref])';
  var UNCITED = '.myst span[title="Citation Not Found"]:not([data-attnbook-ref])';
  var DOC_LINK = '.myst a.link[href*="/files/"]:not([data-attnbook-ref])';
  var CSS = [
    '.myst .attnbook-ref { color: var(--jp-content-link-color); cursor: pointer; }',
    '.myst .attnbook-ref:hover { text-decoration: underline; }',
    '.myst span.attnbook-ref > svg { display: none; }'
  ].join('\n');
  // A nested token carries its ancestors' classes too (a number in an f-string's {...} is
  // "hljs-string hljs-subst hljs-number"), so at equal specificity the innermost kinds come last.
  // Python's highlighter emits string, subst, keyword, literal, built_in, type, number, comment,
  // meta (decorators), title (the name after def/class), params and function/class (these two
  // uncoloured); operator is for other languages' blocks.
  var SYNTAX = [
    '.myst .hljs-string { color: var(--jp-mirror-editor-string-color); }',
    '.myst .hljs-subst { color: var(--jp-mirror-editor-variable-color); }',
    '.myst .hljs-keyword { color: var(--jp-mirror-editor-keyword-color); font-weight: bold; }',
    '.myst .hljs-literal { color: var(--jp-mirror-editor-keyword-color); font-weight: bold; }',  // None True False
    '.myst .hljs-built_in, .myst .hljs-type { color: var(--jp-mirror-editor-builtin-color); }',
    '.myst .hljs-number { color: var(--jp-mirror-editor-number-color); }',
    '.myst .hljs-title { color: var(--jp-mirror-editor-def-color); }',
    '.myst .hljs-meta { color: var(--jp-mirror-editor-meta-color); }',
    '.myst .hljs-operator { color: var(--jp-mirror-editor-operator-color); font-weight: bold; }',
    '.myst .hljs-comment { color: var(--jp-mirror-editor-comment-color); font-style: italic; }'
  ].join('\n');

  // BEGIN CITATIONS (written by tests/tools/lab_citations.py)
  var CITATIONS = {
    "ainslie2023": {"author": "Ainslie et al.", "year": "2023", "title": "GQA: Training Generalized Multi-Query Transformer Models from Multi-Head Checkpoints", "url": "https://arxiv.org/abs/2305.13245"},
    "alrfou2019": {"author": "Al-Rfou et al.", "year": "2019", "title": "Character-Level Language Modeling with Deeper Self-Attention", "url": "https://arxiv.org/abs/1808.04444"},
    "arora2024based": {"author": "Arora et al.", "year": "2024", "title": "Simple Linear Attention Language Models Balance the Recall-Throughput Tradeoff", "url": "https://arxiv.org/abs/2402.18668"},
    "arora2024zoology": {"author": "Arora et al.", "year": "2024", "title": "Zoology: Measuring and Improving Recall in Efficient Language Models", "url": "https://arxiv.org/abs/2312.04927"},
    "ba2016": {"author": "Ba et al.", "year": "2016", "title": "Layer Normalization", "url": "https://arxiv.org/abs/1607.06450"},
    "bahdanau2015": {"author": "Bahdanau et al.", "year": "2015", "title": "Neural Machine Translation by Jointly Learning to Align and Translate", "url": "https://arxiv.org/abs/1409.0473"},
    "bello2017": {"author": "Bello et al.", "year": "2017", "title": "Neural Combinatorial Optimization with Reinforcement Learning", "url": "https://arxiv.org/abs/1611.09940"},
    "beltagy2020": {"author": "Beltagy et al.", "year": "2020", "title": "Longformer: The Long-Document Transformer", "url": "https://arxiv.org/abs/2004.05150"},
    "bengio2003": {"author": "Bengio et al.", "year": "2003", "title": "A Neural Probabilistic Language Model", "url": "https://www.jmlr.org/papers/v3/bengio03a.html"},
    "bengio2013": {"author": "Bengio et al.", "year": "2013", "title": "Estimating or Propagating Gradients Through Stochastic Neurons for Conditional Computation", "url": "https://arxiv.org/abs/1308.3432"},
    "bengio2015": {"author": "Bengio et al.", "year": "2015", "title": "Scheduled Sampling for Sequence Prediction with Recurrent Neural Networks", "url": "https://arxiv.org/abs/1506.03099"},
    "bloc97ntk2023": {"author": "bloc97", "year": "2023", "title": "NTK-Aware Scaled RoPE allows LLaMA models to have extended (8k+) context size without any fine-tuning and minimal perplexity degradation", "url": "https://www.reddit.com/r/LocalLLaMA/comments/14lz7j5/ntkaware_scaled_rope_allows_llama_models_to_have/"},
    "brandon2024": {"author": "Brandon et al.", "year": "2024", "title": "Reducing Transformer Key-Value Cache Size with Cross-Layer Attention", "url": "https://arxiv.org/abs/2405.12981"},
    "chen2023": {"author": "Chen et al.", "year": "2023", "title": "Extending Context Window of Large Language Models via Positional Interpolation", "url": "https://arxiv.org/abs/2306.15595"},
    "cheng2016": {"author": "Cheng et al.", "year": "2016", "title": "Long Short-Term Memory-Networks for Machine Reading", "url": "https://arxiv.org/abs/1601.06733"},
    "chiang2022": {"author": "Chiang and Cholak", "year": "2022", "title": "Overcoming a Theoretical Limitation of Self-Attention", "url": "https://arxiv.org/abs/2202.12172"},
    "child2019": {"author": "Child et al.", "year": "2019", "title": "Generating Long Sequences with Sparse Transformers", "url": "https://arxiv.org/abs/1904.10509"},
    "cho2014": {"author": "Cho et al.", "year": "2014", "title": "Learning Phrase Representations using RNN Encoder–Decoder for Statistical Machine Translation", "url": "https://arxiv.org/abs/1406.1078"},
    "cho2014b": {"author": "Cho et al.", "year": "2014", "title": "On the Properties of Neural Machine Translation: Encoder–Decoder Approaches", "url": "https://arxiv.org/abs/1409.1259"},
    "choromanski2021": {"author": "Choromanski et al.", "year": "2021", "title": "Rethinking Attention with Performers", "url": "https://arxiv.org/abs/2009.14794"},
    "clark2019": {"author": "Clark et al.", "year": "2019", "title": "What Does BERT Look at? An Analysis of BERT's Attention", "url": "https://arxiv.org/abs/1906.04341"},
    "dao2022": {"author": "Dao et al.", "year": "2022", "title": "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness", "url": "https://arxiv.org/abs/2205.14135"},
    "dao2023flashdecoding": {"author": "Dao et al.", "year": "2023", "title": "Flash-Decoding for Long-Context Inference", "url": "https://pytorch.org/blog/flash-decoding/"},
    "dao2024": {"author": "Dao", "year": "2024", "title": "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning", "url": "https://arxiv.org/abs/2307.08691"},
    "dao2024ssd": {"author": "Dao and Gu", "year": "2024", "title": "Transformers are SSMs: Generalized Models and Efficient Algorithms Through Structured State Space Duality", "url": "https://arxiv.org/abs/2405.21060"},
    "deepseekai2024": {"author": "DeepSeek-AI", "year": "2024", "title": "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model", "url": "https://arxiv.org/abs/2405.04434"},
    "deepseekai2025flashmla": {"author": "DeepSeek-AI", "year": "2025", "title": "FlashMLA: Efficient Multi-head Latent Attention Kernels", "url": "https://github.com/deepseek-ai/FlashMLA"},
    "dehghani2023": {"author": "Dehghani et al.", "year": "2023", "title": "Scaling Vision Transformers to 22 Billion Parameters", "url": "https://arxiv.org/abs/2302.05442"},
    "devlin2019": {"author": "Devlin et al.", "year": "2019", "title": "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding", "url": "https://arxiv.org/abs/1810.04805"},
    "ding2024longrope": {"author": "Ding et al.", "year": "2024", "title": "LongRoPE: Extending LLM Context Window Beyond 2 Million Tokens", "url": "https://arxiv.org/abs/2402.13753"},
    "dong2024": {"author": "Dong et al.", "year": "2024", "title": "Flex Attention: A Programming Model for Generating Optimized Attention Kernels", "url": "https://arxiv.org/abs/2412.05496"},
    "edelman2024": {"author": "Edelman et al.", "year": "2024", "title": "The Evolution of Statistical Induction Heads: In-Context Learning Markov Chains", "url": "https://arxiv.org/abs/2402.11004"},
    "elhage2021": {"author": "Elhage et al.", "year": "2021", "title": "A Mathematical Framework for Transformer Circuits", "url": "https://transformer-circuits.pub/2021/framework/index.html"},
    "fan2018": {"author": "Fan et al.", "year": "2018", "title": "Hierarchical Neural Story Generation", "url": "https://arxiv.org/abs/1805.04833"},
    "fedus2022": {"author": "Fedus et al.", "year": "2022", "title": "Switch Transformers: Scaling to Trillion Parameter Models with Simple and Efficient Sparsity", "url": "https://arxiv.org/abs/2101.03961"},
    "gehring2017": {"author": "Gehring et al.", "year": "2017", "title": "Convolutional Sequence to Sequence Learning", "url": "https://arxiv.org/abs/1705.03122"},
    "gemmateam2024": {"author": "Gemma Team", "year": "2024", "title": "Gemma 2: Improving Open Language Models at a Practical Size", "url": "https://arxiv.org/abs/2408.00118"},
    "gemmateam2025": {"author": "Gemma Team", "year": "2025", "title": "Gemma 3 Technical Report", "url": "https://arxiv.org/abs/2503.19786"},
    "glorot2010": {"author": "Glorot and Bengio", "year": "2010", "title": "Understanding the Difficulty of Training Deep Feedforward Neural Networks", "url": ""},
    "grattafiori2024": {"author": "Grattafiori and others", "year": "2024", "title": "The Llama 3 Herd of Models", "url": "https://arxiv.org/abs/2407.21783"},
    "graves2013": {"author": "Graves", "year": "2013", "title": "Generating Sequences With Recurrent Neural Networks", "url": "https://arxiv.org/abs/1308.0850"},
    "graves2014": {"author": "Graves et al.", "year": "2014", "title": "Neural Turing Machines", "url": "https://arxiv.org/abs/1410.5401"},
    "gu2016": {"author": "Gu et al.", "year": "2016", "title": "Incorporating Copying Mechanism in Sequence-to-Sequence Learning", "url": "https://arxiv.org/abs/1603.06393"},
    "gu2025": {"author": "Gu et al.", "year": "2025", "title": "When Attention Sink Emerges in Language Models: An Empirical View", "url": "https://arxiv.org/abs/2410.10781"},
    "he2016": {"author": "He et al.", "year": "2016", "title": "Deep Residual Learning for Image Recognition", "url": "https://arxiv.org/abs/1512.03385"},
    "heimersheim2024": {"author": "Heimersheim and Nanda", "year": "2024", "title": "How to use and interpret activation patching", "url": "https://arxiv.org/abs/2404.15255"},
    "hendrycks2016": {"author": "Hendrycks and Gimpel", "year": "2016", "title": "Gaussian Error Linear Units (GELUs)", "url": "https://arxiv.org/abs/1606.08415"},
    "henry2020": {"author": "Henry et al.", "year": "2020", "title": "Query-Key Normalization for Transformers", "url": "https://arxiv.org/abs/2010.04245"},
    "hochreiter1997": {"author": "Hochreiter and Schmidhuber", "year": "1997", "title": "Long Short-Term Memory", "url": "https://doi.org/10.1162/neco.1997.9.8.1735"},
    "holtzman2020": {"author": "Holtzman et al.", "year": "2020", "title": "The Curious Case of Neural Text Degeneration", "url": "https://arxiv.org/abs/1904.09751"},
    "hooper2024": {"author": "Hooper et al.", "year": "2024", "title": "KVQuant: Towards 10 Million Context Length LLM Inference with KV Cache Quantization", "url": "https://arxiv.org/abs/2401.18079"},
    "hsieh2024ruler": {"author": "Hsieh et al.", "year": "2024", "title": "RULER: What's the Real Context Size of Your Long-Context Language Models?", "url": "https://arxiv.org/abs/2404.06654"},
    "jain2019": {"author": "Jain and Wallace", "year": "2019", "title": "Attention is not Explanation", "url": "https://arxiv.org/abs/1902.10186"},
    "jang2017": {"author": "Jang et al.", "year": "2017", "title": "Categorical Reparameterization with Gumbel-Softmax", "url": "https://arxiv.org/abs/1611.01144"},
    "jiang2023": {"author": "Jiang et al.", "year": "2023", "title": "Mistral 7B", "url": "https://arxiv.org/abs/2310.06825"},
    "jin2024selfextend": {"author": "Jin et al.", "year": "2024", "title": "LLM Maybe LongLM: SelfExtend LLM Context Window Without Tuning", "url": "https://arxiv.org/abs/2401.01325"},
    "kaiokendev2023": {"author": "kaiokendev", "year": "2023", "title": "Things I'm Learning While Training SuperHOT", "url": "https://kaiokendev.github.io/til#extending-context-to-8k"},
    "karpathy2015": {"author": "Karpathy", "year": "2015", "title": "The Unreasonable Effectiveness of Recurrent Neural Networks", "url": "https://karpathy.github.io/2015/05/21/rnn-effectiveness/"},
    "katharopoulos2020": {"author": "Katharopoulos et al.", "year": "2020", "title": "Transformers are RNNs: Fast Autoregressive Transformers with Linear Attention", "url": "https://arxiv.org/abs/2006.16236"},
    "kazemnejad2023": {"author": "Kazemnejad et al.", "year": "2023", "title": "The Impact of Positional Encoding on Length Generalization in Transformers", "url": "https://arxiv.org/abs/2305.19466"},
    "keskar2019": {"author": "Keskar et al.", "year": "2019", "title": "CTRL: A Conditional Transformer Language Model for Controllable Generation", "url": "https://arxiv.org/abs/1909.05858"},
    "kim2017": {"author": "Kim et al.", "year": "2017", "title": "Structured Attention Networks", "url": "https://arxiv.org/abs/1702.00887"},
    "kimi2025linear": {"author": "Kimi Team", "year": "2025", "title": "Kimi Linear: An Expressive, Efficient Attention Architecture", "url": "https://arxiv.org/abs/2510.26692"},
    "kingma2015": {"author": "Kingma and Ba", "year": "2015", "title": "Adam: A Method for Stochastic Optimization", "url": "https://arxiv.org/abs/1412.6980"},
    "kool2019": {"author": "Kool et al.", "year": "2019", "title": "Attention, Learn to Solve Routing Problems!", "url": "https://arxiv.org/abs/1803.08475"},
    "kwon2023": {"author": "Kwon et al.", "year": "2023", "title": "Efficient Memory Management for Large Language Model Serving with PagedAttention", "url": "https://arxiv.org/abs/2309.06180"},
    "lieber2024jamba": {"author": "Lieber et al.", "year": "2024", "title": "Jamba: A Hybrid Transformer-Mamba Language Model", "url": "https://arxiv.org/abs/2403.19887"},
    "liu2020a": {"author": "Liu et al.", "year": "2020", "title": "On the Variance of the Adaptive Learning Rate and Beyond", "url": "https://arxiv.org/abs/1908.03265"},
    "liu2020b": {"author": "Liu et al.", "year": "2020", "title": "Understanding the Difficulty of Training Transformers", "url": "https://aclanthology.org/2020.emnlp-main.463"},
    "liu2024": {"author": "Liu et al.", "year": "2024", "title": "Ring Attention with Blockwise Transformers for Near-Infinite Context", "url": "https://arxiv.org/abs/2310.01889"},
    "liu2024lost": {"author": "Liu et al.", "year": "2024", "title": "Lost in the Middle: How Language Models Use Long Contexts", "url": "https://arxiv.org/abs/2307.03172"},
    "luong2015": {"author": "Luong et al.", "year": "2015", "title": "Effective Approaches to Attention-based Neural Machine Translation", "url": "https://arxiv.org/abs/1508.04025"},
    "maddison2017": {"author": "Maddison et al.", "year": "2017", "title": "The Concrete Distribution: A Continuous Relaxation of Discrete Random Variables", "url": "https://arxiv.org/abs/1611.00712"},
    "martins2016": {"author": "Martins and Astudillo", "year": "2016", "title": "From Softmax to Sparsemax: A Sparse Model of Attention and Multi-Label Classification", "url": "https://arxiv.org/abs/1602.02068"},
    "meta2025llama4": {"author": "Meta AI", "year": "2025", "title": "The Llama 4 Herd: The Beginning of a New Era of Natively Multimodal AI Innovation", "url": "https://ai.meta.com/blog/llama-4-multimodal-intelligence/"},
    "michel2019": {"author": "Michel et al.", "year": "2019", "title": "Are Sixteen Heads Really Better than One?", "url": "https://arxiv.org/abs/1905.10650"},
    "milakov2018": {"author": "Milakov and Gimelshein", "year": "2018", "title": "Online normalizer calculation for softmax", "url": "https://arxiv.org/abs/1805.02867"},
    "mnih2014": {"author": "Mnih et al.", "year": "2014", "title": "Recurrent Models of Visual Attention", "url": "https://arxiv.org/abs/1406.6247"},
    "nadaraya1964": {"author": "Nadaraya", "year": "1964", "title": "On Estimating Regression", "url": "https://doi.org/10.1137/1109020"},
    "nakanishi2025": {"author": "Nakanishi", "year": "2025", "title": "Scalable-Softmax Is Superior for Attention", "url": "https://arxiv.org/abs/2501.19399"},
    "nguyen2025": {"author": "Nguyen et al.", "year": "2025", "title": "Turning Up the Heat: Min-p Sampling for Creative and Coherent LLM Outputs", "url": "https://arxiv.org/abs/2407.01082"},
    "nvidia2022hopper": {"author": "NVIDIA", "year": "2022", "title": "NVIDIA H100 Tensor Core GPU Architecture", "url": "https://resources.nvidia.com/en-us-tensor-core"},
    "nvidia2024h200": {"author": "NVIDIA", "year": "2024", "title": "NVIDIA H200 Tensor Core GPU Datasheet", "url": "https://www.nvidia.com/en-us/data-center/h200/"},
    "olsson2022": {"author": "Olsson et al.", "year": "2022", "title": "In-context Learning and Induction Heads", "url": "https://transformer-circuits.pub/2022/in-context-learning-and-induction-heads/index.html"},
    "openai2025gptoss": {"author": "OpenAI", "year": "2025", "title": "gpt-oss-120b & gpt-oss-20b Model Card", "url": "https://arxiv.org/abs/2508.10925"},
    "parikh2016": {"author": "Parikh et al.", "year": "2016", "title": "A Decomposable Attention Model for Natural Language Inference", "url": "https://arxiv.org/abs/1606.01933"},
    "peng2024": {"author": "Peng et al.", "year": "2024", "title": "YaRN: Efficient Context Window Extension of Large Language Models", "url": "https://arxiv.org/abs/2309.00071"},
    "pope2023": {"author": "Pope et al.", "year": "2023", "title": "Efficiently Scaling Transformer Inference", "url": "https://arxiv.org/abs/2211.05102"},
    "press2022": {"author": "Press et al.", "year": "2022", "title": "Train Short, Test Long: Attention with Linear Biases Enables Input Length Extrapolation", "url": "https://arxiv.org/abs/2108.12409"},
    "qiu2020": {"author": "Qiu", "year": "2020", "title": "Neural Networks and Deep Learning (神经网络与深度学习)", "url": "https://nndl.github.io"},
    "qiu2025": {"author": "Qiu et al.", "year": "2025", "title": "Gated Attention for Large Language Models: Non-linearity, Sparsity, and Attention-Sink-Free", "url": "https://arxiv.org/abs/2505.06708"},
    "qiu2025gated": {"author": "Qiu et al.", "year": "2025", "title": "Gated Attention for Large Language Models: Non-linearity, Sparsity, and Attention-Sink-Free", "url": "https://arxiv.org/abs/2505.06708"},
    "qwen2025next": {"author": "Qwen Team", "year": "2025", "title": "Qwen3-Next: Towards Ultimate Training & Inference Efficiency", "url": "https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct"},
    "rabe2021": {"author": "Rabe and Staats", "year": "2021", "title": "Self-attention Does Not Need O(n²) Memory", "url": "https://arxiv.org/abs/2112.05682"},
    "radford2018": {"author": "Radford et al.", "year": "2018", "title": "Improving Language Understanding by Generative Pre-Training", "url": "https://cdn.openai.com/research-covers/language-unsupervised/language_understanding_paper.pdf"},
    "radford2019": {"author": "Radford et al.", "year": "2019", "title": "Language Models are Unsupervised Multitask Learners", "url": ""},
    "raffel2020": {"author": "Raffel et al.", "year": "2020", "title": "Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer", "url": "https://arxiv.org/abs/1910.10683"},
    "schlag2021": {"author": "Schlag et al.", "year": "2021", "title": "Linear Transformers Are Secretly Fast Weight Programmers", "url": "https://arxiv.org/abs/2102.11174"},
    "see2017": {"author": "See et al.", "year": "2017", "title": "Get To The Point: Summarization with Pointer-Generator Networks", "url": "https://arxiv.org/abs/1704.04368"},
    "sennrich2016": {"author": "Sennrich et al.", "year": "2016", "title": "Neural Machine Translation of Rare Words with Subword Units", "url": "https://aclanthology.org/P16-1162/"},
    "serrano2019": {"author": "Serrano and Smith", "year": "2019", "title": "Is Attention Interpretable?", "url": "https://arxiv.org/abs/1906.03731"},
    "shah2024": {"author": "Shah et al.", "year": "2024", "title": "FlashAttention-3: Fast and Accurate Attention with Asynchrony and Low-precision", "url": "https://arxiv.org/abs/2407.08608"},
    "shannon1948": {"author": "Shannon", "year": "1948", "title": "A Mathematical Theory of Communication", "url": "https://doi.org/10.1002/j.1538-7305.1948.tb01338.x"},
    "shannon1951": {"author": "Shannon", "year": "1951", "title": "Prediction and Entropy of Printed English", "url": "https://doi.org/10.1002/j.1538-7305.1951.tb01366.x"},
    "shaw2018": {"author": "Shaw et al.", "year": "2018", "title": "Self-Attention with Relative Position Representations", "url": "https://arxiv.org/abs/1803.02155"},
    "shazeer2017": {"author": "Shazeer et al.", "year": "2017", "title": "Outrageously Large Neural Networks: The Sparsely-Gated Mixture-of-Experts Layer", "url": "https://arxiv.org/abs/1701.06538"},
    "shazeer2019": {"author": "Shazeer", "year": "2019", "title": "Fast Transformer Decoding: One Write-Head is All You Need", "url": "https://arxiv.org/abs/1911.02150"},
    "shazeer2020": {"author": "Shazeer", "year": "2020", "title": "GLU Variants Improve Transformer", "url": "https://arxiv.org/abs/2002.05202"},
    "singh2024": {"author": "Singh et al.", "year": "2024", "title": "What needs to go right for an induction head? A mechanistic study of in-context learning circuits and their formation", "url": "https://arxiv.org/abs/2404.07129"},
    "su2023rerope": {"author": "Su", "year": "2023", "title": "Transformer Upgrade Road: 12. ReRoPE with Infinite Extrapolation", "url": "https://kexue.fm/archives/9708"},
    "su2024": {"author": "Su et al.", "year": "2024", "title": "RoFormer: Enhanced Transformer with Rotary Position Embedding", "url": "https://arxiv.org/abs/2104.09864"},
    "sutskever2014": {"author": "Sutskever et al.", "year": "2014", "title": "Sequence to Sequence Learning with Neural Networks", "url": "https://arxiv.org/abs/1409.3215"},
    "tay2022": {"author": "Tay et al.", "year": "2022", "title": "Efficient Transformers: A Survey", "url": "https://arxiv.org/abs/2009.06732"},
    "tillet2019": {"author": "Tillet et al.", "year": "2019", "title": "Triton: An Intermediate Language and Compiler for Tiled Neural Network Computations", "url": "https://doi.org/10.1145/3315508.3329973"},
    "touvron2023a": {"author": "Touvron et al.", "year": "2023", "title": "LLaMA: Open and Efficient Foundation Language Models", "url": "https://arxiv.org/abs/2302.13971"},
    "touvron2023b": {"author": "Touvron et al.", "year": "2023", "title": "Llama 2: Open Foundation and Fine-Tuned Chat Models", "url": "https://arxiv.org/abs/2307.09288"},
    "vaswani2017": {"author": "Vaswani et al.", "year": "2017", "title": "Attention Is All You Need", "url": "https://arxiv.org/abs/1706.03762"},
    "vinyals2015": {"author": "Vinyals et al.", "year": "2015", "title": "Pointer Networks", "url": "https://arxiv.org/abs/1506.03134"},
    "vinyals2016": {"author": "Vinyals et al.", "year": "2016", "title": "Order Matters: Sequence to Sequence for Sets", "url": "https://arxiv.org/abs/1511.06391"},
    "voita2019": {"author": "Voita et al.", "year": "2019", "title": "Analyzing Multi-Head Self-Attention: Specialized Heads Do the Heavy Lifting, the Rest Can Be Pruned", "url": "https://arxiv.org/abs/1905.09418"},
    "wang2020": {"author": "Wang et al.", "year": "2020", "title": "Linformer: Self-Attention with Linear Complexity", "url": "https://arxiv.org/abs/2006.04768"},
    "wang2023ioi": {"author": "Wang et al.", "year": "2023", "title": "Interpretability in the Wild: a Circuit for Indirect Object Identification in GPT-2 Small", "url": "https://arxiv.org/abs/2211.00593"},
    "wang2025": {"author": "Wang et al.", "year": "2025", "title": "Test-time Regression: A Unifying Framework for Designing Sequence Models with Associative Memory", "url": "https://arxiv.org/abs/2501.12352"},
    "warner2024": {"author": "Warner et al.", "year": "2024", "title": "Smarter, Better, Faster, Longer: A Modern Bidirectional Encoder for Fast, Memory Efficient, and Long Context Finetuning and Inference", "url": "https://arxiv.org/abs/2412.13663"},
    "watson1964": {"author": "Watson", "year": "1964", "title": "Smooth Regression Analysis", "url": ""},
    "widrow1960": {"author": "Widrow and Hoff", "year": "1960", "title": "Adaptive Switching Circuits", "url": ""},
    "wiegreffe2019": {"author": "Wiegreffe and Pinter", "year": "2019", "title": "Attention is not not Explanation", "url": "https://arxiv.org/abs/1908.04626"},
    "williams1992": {"author": "Williams", "year": "1992", "title": "Simple Statistical Gradient-Following Algorithms for Connectionist Reinforcement Learning", "url": "https://doi.org/10.1007/BF00992696"},
    "williams2009": {"author": "Williams et al.", "year": "2009", "title": "Roofline: An Insightful Visual Performance Model for Multicore Architectures", "url": "https://doi.org/10.1145/1498765.1498785"},
    "wu2016": {"author": "Wu et al.", "year": "2016", "title": "Google's Neural Machine Translation System: Bridging the Gap between Human and Machine Translation", "url": "https://arxiv.org/abs/1609.08144"},
    "wu2022": {"author": "Wu et al.", "year": "2022", "title": "Memorizing Transformers", "url": "https://arxiv.org/abs/2203.08913"},
    "xiao2024": {"author": "Xiao et al.", "year": "2024", "title": "Efficient Streaming Language Models with Attention Sinks", "url": "https://arxiv.org/abs/2309.17453"},
    "xiong2020": {"author": "Xiong et al.", "year": "2020", "title": "On Layer Normalization in the Transformer Architecture", "url": "https://arxiv.org/abs/2002.04745"},
    "xiong2023long": {"author": "Xiong et al.", "year": "2023", "title": "Effective Long-Context Scaling of Foundation Models", "url": "https://arxiv.org/abs/2309.16039"},
    "xu2015": {"author": "Xu et al.", "year": "2015", "title": "Show, Attend and Tell: Neural Image Caption Generation with Visual Attention", "url": "https://arxiv.org/abs/1502.03044"},
    "yang2016": {"author": "Yang et al.", "year": "2016", "title": "Hierarchical Attention Networks for Document Classification", "url": "https://aclanthology.org/N16-1174/"},
    "yang2022": {"author": "Yang et al.", "year": "2022", "title": "Tensor Programs V: Tuning Large Neural Networks via Zero-Shot Hyperparameter Transfer", "url": "https://arxiv.org/abs/2203.03466"},
    "yang2024deltanet": {"author": "Yang et al.", "year": "2024", "title": "Parallelizing Linear Transformers with the Delta Rule over Sequence Length", "url": "https://arxiv.org/abs/2406.06484"},
    "yang2024gla": {"author": "Yang et al.", "year": "2024", "title": "Gated Linear Attention Transformers with Hardware-Efficient Training", "url": "https://arxiv.org/abs/2312.06635"},
    "yang2025gated": {"author": "Yang et al.", "year": "2025", "title": "Gated Delta Networks: Improving Mamba2 with Delta Rule", "url": "https://arxiv.org/abs/2412.06464"},
    "zhang2019": {"author": "Zhang and Sennrich", "year": "2019", "title": "Root Mean Square Layer Normalization", "url": "https://arxiv.org/abs/1910.07467"},
    "zhang2023": {"author": "Zhang et al.", "year": "2023", "title": "Dive into Deep Learning", "url": "https://d2l.ai"},
  };
  // END CITATIONS

  function textNode(element) {
    for (var i = element.childNodes.length - 1; i >= 0; i--) {
      var child = element.childNodes[i];
      if (child.nodeType === Node.TEXT_NODE && child.textContent.trim()) return child;
    }
    return null;
  }

  function panelOf(app, node) {
    for (var widget of app.shell.widgets('main')) {
      if (widget.context && widget.content && widget.node.contains(node)) return widget;
    }
    return null;
  }

  function directory(path) {
    var i = path.lastIndexOf('/');
    return i < 0 ? '' : path.slice(0, i + 1);
  }

  function figures(panel) {
    var match = /^(\d+)_/.exec(panel.context.path.split('/').pop());
    var prefix = match ? String(parseInt(match[1], 10)) + '.' : '';
    var numbers = {};
    var k = 0;
    panel.content.widgets.forEach(function (cell, index) {
      if (cell.model.type !== 'code') return;
      var meta = cell.model.getMetadata('mystnb');
      var name = meta && meta.figure && meta.figure.name;
      if (!name) return;
      k += 1;
      numbers[name] = {text: 'Fig. ' + prefix + k, index: index};
    });
    return numbers;
  }

  function showCell(panel, index) {
    var notebook = panel.content;
    notebook.activeCellIndex = index;
    var cell = notebook.widgets[index];
    var output = cell.node.querySelector('.jp-OutputArea') || cell.node;
    if (typeof notebook.scrollToItem === 'function') {
      notebook.scrollToItem(index, 'start').then(function () { output.scrollIntoView({block: 'start'}); });
    } else {
      output.scrollIntoView({block: 'start'});
    }
  }

  // The markdown texts of a document: each markdown cell of a notebook, or a .md file's text.
  var texts = {};
  function documentTexts(app, path) {
    if (!texts[path]) {
      texts[path] = app.serviceManager.contents.get(path, {content: true}).then(function (model) {
        if (model.type === 'notebook') {
          return model.content.cells.filter(function (cell) { return cell.cell_type === 'markdown'; })
            .map(function (cell) { return [].concat(cell.source).join(''); });
        }
        return [model.content || ''];
      }).catch(function () { return []; });
    }
    return texts[path];
  }

  function title(app, path) {
    return documentTexts(app, path).then(function (parts) {
      var heading = /^#\s+(.+)$/m.exec(parts.length ? parts[0] : '');
      return heading ? heading[1].trim() : null;
    });
  }

  // Targets `(label)=` of the documents next to `directory`: label -> {path, text}, the text being
  // the heading the label stands before (what the HTML book shows for a {ref} without text).
  var targets = {};
  function labelTargets(app, directory) {
    if (!targets[directory]) {
      targets[directory] = app.serviceManager.contents.get(directory, {content: true}).then(function (listing) {
        var paths = listing.content.filter(function (item) { return /\.(md|ipynb)$/.test(item.name); })
          .map(function (item) { return item.path; });
        return Promise.all(paths.map(function (path) { return documentTexts(app, path); })).then(function (all) {
          var found = {};
          all.forEach(function (parts, i) {
            parts.forEach(function (text) {
              var pattern = /^\((\S+)\)=[ \t]*\n+(?:#+[ \t]+(.+))?/gm;
              var match;
              while ((match = pattern.exec(text)) !== null) {
                found[match[1]] = {path: paths[i], text: match[2] ? match[2].trim() : null};
              }
            });
          });
          return found;
        });
      }).catch(function () { return {}; });
    }
    return targets[directory];
  }

  function open(app, path) {
    var args = path.endsWith('.md') ? {path: path, factory: 'Markdown Preview'} : {path: path};
    return app.commands.execute('docmanager:open', args);
  }

  function asLink(span, text, title, onClick) {
    span.title = title;
    span.classList.remove('text-yellow-600');
    span.classList.add('attnbook-ref');
    span.setAttribute('role', 'link');
    var node = textNode(span);
    if (node) node.textContent = text;
    span.addEventListener('click', function (event) {
      event.preventDefault();
      onClick();
    });
  }

  function fixFigureReferences(app) {
    document.querySelectorAll(UNRESOLVED).forEach(function (span) {
      var panel = panelOf(app, span);
      var text = textNode(span);
      if (!panel || !text) return;
      var label = text.textContent.trim();
      var figure = figures(panel)[label];
      span.setAttribute('data-attnbook-ref', figure ? 'figure' : 'label');
      if (figure) {
        asLink(span, figure.text, figure.text + ' (a figure of this chapter)', function () { showCell(panel, figure.index); });
        return;
      }
      // A label of another document (a {ref} without text): its heading, and a click opens it.
      labelTargets(app, directory(panel.context.path).replace(/\/$/, '')).then(function (found) {
        var target = found[label];
        if (!target) return;  // left as jupyterlab-myst shows it: tests/test_lab.py reports it
        asLink(span, target.text || label, 'Open ' + target.path.split('/').pop() + ' in JupyterLab',
               function () { open(app, target.path); });
      });
    });
  }

  // A citation's text as the HTML book writes it (_sphinx/ext/citations.py): in a narrative
  // group "Vaswani et al. (2017)", otherwise "(Vaswani et al., 2017)"; several keys in one
  // parenthetical group share the brackets: "(Jang et al., 2017; Maddison et al., 2017)".
  function fixCitations() {
    document.querySelectorAll(UNCITED).forEach(function (span) {
      var text = textNode(span);
      var entry = text && CITATIONS[text.textContent.trim()];
      if (!entry) return;  // left as jupyterlab-myst shows it: tests/test_lab.py reports it
      var group = span.closest('.cite-group');
      var cites = group ? [].slice.call(group.querySelectorAll(
        'span[title="Citation Not Found"], span[data-attnbook-ref="citation"]')) : [span];
      var first = cites[0] === span;
      var last = cites[cites.length - 1] === span;
      var label;
      if (group && group.classList.contains('narrative')) {
        label = entry.author + ' (' + entry.year + ')' + (last ? '' : '; ');
      } else {
        label = (first ? '(' : '') + entry.author + ', ' + entry.year + (last ? ')' : '; ');
      }
      span.setAttribute('data-attnbook-ref', 'citation');
      asLink(span, label, entry.author + ' (' + entry.year + '). ' + entry.title + '.', function () {
        if (entry.url) window.open(entry.url, '_blank', 'noopener');
      });
    });
  }

  function fixDocumentLinks(app) {
    document.querySelectorAll(DOC_LINK).forEach(function (link) {
      var name = decodeURIComponent(new URL(link.href).pathname.split('/files/').pop());
      var panel = panelOf(app, link);
      link.setAttribute('data-attnbook-ref', 'document');
      if (!panel || /\.[A-Za-z0-9]+$/.test(name)) return;  // a real file: leave it
      var base = directory(panel.context.path) + name;
      var path = /^\d+_/.test(name.split('/').pop()) ? base + '.ipynb' : base + '.md';
      link.classList.add('attnbook-ref');
      link.setAttribute('href', '#');
      link.title = 'Open ' + path.split('/').pop() + ' in JupyterLab';
      link.addEventListener('click', function (event) {
        event.preventDefault();
        open(app, path);
      });
      title(app, path).then(function (heading) {
        var text = textNode(link);
        if (heading && text && text.textContent.trim() === name) text.textContent = heading;
      });
    });
  }

  var plugin = {
    id: 'attnbook-lab:book-references',
    description: "Numbers the book's figure references and names its chapter links in JupyterLab.",
    autoStart: true,
    activate: function (app) {
      var style = document.createElement('style');
      style.textContent = CSS + '\n' + SYNTAX;
      document.head.appendChild(style);
      var pending = false;
      function run() {
        pending = false;
        fixFigureReferences(app);
        fixDocumentLinks(app);
        fixCitations();
      }
      new MutationObserver(function () {
        if (!pending) {
          pending = true;
          setTimeout(run, 50);
        }
      }).observe(document.body, {childList: true, subtree: true});
    }
  };

  var container = {
    init: function () { return Promise.resolve(); },
    get: function (module) {
      if (module !== './extension') return Promise.reject(new Error('attnbook-lab has no module ' + module));
      return Promise.resolve(function () { return {__esModule: true, default: [plugin]}; });
    }
  };
  window._JUPYTERLAB = window._JUPYTERLAB || {};
  window._JUPYTERLAB['attnbook-lab'] = container;
})();
