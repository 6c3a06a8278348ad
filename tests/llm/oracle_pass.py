"""The decoder oracles' common pass (llama_parity.py, gpt_parity.py, lora_parity.py): one batch
forward and backward in fp32 and again in fp64, the logits, the mean next-token cross-entropy
(labels of -100 ignored, as ours) and the gradients the caller names, keyed as the C++ tests read
them ("logits", "loss", "grad/<name>", each again under "f64/")."""
import torch
import torch.nn.functional as F


def forward_backward_record(model, tokens, labels, vocab, gradients, prepare=None):
    """gradients(model) -> {our name: gradient}; prepare(model), if given, runs after each cast."""
    result = {}
    for prefix, dtype in (("", torch.float32), ("f64/", torch.float64)):
        model = model.to(dtype)
        if prepare is not None:
            prepare(model)
        model.zero_grad()
        logits = model(input_ids=tokens).logits
        loss = F.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1))
        loss.backward()
        result[prefix + "logits"] = logits.detach().reshape(-1, vocab)
        result[prefix + "loss"] = loss.detach().reshape(1)
        for name, g in gradients(model).items():
            result[prefix + "grad/" + name] = g
    return result
