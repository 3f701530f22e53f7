// The explorers on a saved page, with no kernel and no widget manager: each
// div.dtsgd-live (its data-model-id names a model) gets its widget's saved state (from
// the page's script.dtsgd-live-state, a JSON block) in a small model
// object, and the ES module saved in that state draws it, as in a notebook. Python
// callbacks cannot run here; everything the explorers do in the browser still works.
(async function () {
  const holder = document.querySelector("script.dtsgd-live-state");
  if (!holder) return;
  const saved = JSON.parse(holder.textContent);
  const modules = {};
  function model(state) {
    const handlers = {};
    return {
      get: (k) => state[k],
      set: (k, v) => {
        state[k] = v;
        for (const f of handlers["change:" + k] || []) f();
      },
      on: (name, f) => (handlers[name] = handlers[name] || []).push(f),
      off: (name, f) => {
        if (!name) { for (const k in handlers) delete handlers[k]; return; }
        handlers[name] = (handlers[name] || []).filter((g) => f && g !== f);
      },
      save_changes: () => {},
      send: () => {},
      widget_manager: {},
    };
  }
  // a model's binary buffers (base64) put back at their paths in its state
  function withBuffers(entry) {
    const state = entry.state;
    for (const b of entry.buffers || []) {
      let node = state;
      for (const key of b.path.slice(0, -1)) node = node[key];
      node[b.path[b.path.length - 1]] = b.data;
    }
    return state;
  }
  for (const div of document.querySelectorAll("div.dtsgd-live")) {
    const entry = saved[div.dataset.modelId];
    if (!entry) continue;
    const state = withBuffers(entry);
    try {
      const src = state._esm;
      if (!modules[src]) {
        const url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
        modules[src] = import(url);
      }
      const mod = await modules[src];
      const widget = mod.default || mod;
      const m = model(state);
      if (widget.initialize) await widget.initialize({ model: m });
      await widget.render({ model: m, el: div });
      div.classList.add("dtsgd-live-ready");
      const still = div.parentElement && div.parentElement.querySelector("img.widget-snapshot");
      if (still) still.style.display = "none";
    } catch (err) {
      div.classList.add("dtsgd-live-failed");
      div.textContent = "This explorer could not start here: " + err;
      console.error(err);
    }
  }
})();
