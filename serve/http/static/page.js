// kenning's page: every change is a fetch to the JSON API; the answer's error line is shown as is.
"use strict";

function showMessage(text, ok) {
  const box = document.getElementById("message");
  box.textContent = text;
  box.className = ok ? "ok" : "error";
  box.hidden = false;
}

async function call(method, url, body) {
  const options = { method, headers: { "Accept": "application/json" } };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(url, options);
  let payload = {};
  try { payload = await response.json(); } catch (e) { /* an empty or non-JSON answer */ }
  if (!response.ok) {
    const text = payload.error || payload.reason || (response.status + " " + response.statusText);
    throw new Error(payload.hint && !text.includes(payload.hint) ? text + " " + payload.hint : text);
  }
  return payload;
}

function scopesOf(text) {
  return text.split(",").map((s) => s.trim()).filter((s) => s.length > 0);
}

// run an action; on success either reload, go somewhere, or say so
async function act(fn, after) {
  try {
    const result = await fn();
    if (typeof after === "function") after(result);
    else if (after) window.location.assign(after);
    else window.location.reload();
  } catch (error) {
    showMessage(error.message, false);
  }
}

function onSubmit(id, handler) {
  const form = document.getElementById(id);
  if (form) form.addEventListener("submit", (event) => { event.preventDefault(); handler(form); });
}

onSubmit("write-form", (form) => act(() => call("POST", "/memories", {
  content: form.content.value, scopes: scopesOf(form.scopes.value), category: form.category.value,
}), (result) => {
  form.reset();
  showMessage(result.status === "pending"
    ? "Staged for confirmation (" + result.pending_reason + "): see Pending." : "Written: " + result.id, true);
}));

// the scopes are sent only when the person changed the field: a comma may be part of a scope's name
// ("team:a,b"), so splitting the shown list again would re-scope the memory on every save of its text
onSubmit("edit-form", (form) => act(() => {
  // the version shown: if another agent changed the memory since, the answer is a 409 (stale) and nothing is written
  const changes = { text: form.text.value, version: form.dataset.version || null };
  if (form.scopes.value !== form.scopes.defaultValue) changes.scopes = scopesOf(form.scopes.value);
  return call("PATCH", "/memories/" + encodeURIComponent(form.dataset.id), changes);
}));

onSubmit("verify-form", (form) => act(() => call("POST", "/memories/" + encodeURIComponent(form.dataset.id) + "/verify",
  { note: form.note.value || null, version: form.dataset.version || null })));

onSubmit("remove-form", (form) => act(() => call("DELETE", "/memories/" + encodeURIComponent(form.dataset.id)
  + "?reason=" + encodeURIComponent(form.reason.value)), "/ui/tombstones"));

const actions = {
  restore: (id) => call("POST", "/memories/" + encodeURIComponent(id) + "/restore"),
  confirm: (id) => call("POST", "/pending/" + encodeURIComponent(id) + "/confirm"),
  cancel: (id) => call("POST", "/pending/" + encodeURIComponent(id) + "/cancel"),
};
document.querySelectorAll("button[data-action]").forEach((button) => {
  button.addEventListener("click", () => act(() => actions[button.dataset.action](button.dataset.id)));
});

// live settings: a checkbox or the mode menu PATCHes one setting; on a refusal the control flips back
document.querySelectorAll("[data-setting]").forEach((control) => {
  control.addEventListener("change", async () => {
    const name = control.dataset.setting;
    const value = control.type === "checkbox" ? control.checked : control.value;
    try {
      const settings = await call("PATCH", "/config", { [name]: value });
      showMessage(name + " is now " + settings[name], true);
    } catch (error) {
      if (control.type === "checkbox") control.checked = !value;
      showMessage(error.message, false);
    }
  });
});
